/**
 * TimelineView: a step trace (flowlab/viz/timeline.py) as a Gantt chart -- one lane
 * per device and executor thread, the steps side by side, zoom (wheel or buttons) and
 * pan (drag), an op's details on hover, Send/Recv flows as arrows, and an export of
 * what is shown to Perfetto's JSON.
 *
 * Linked with a GraphView through the GraphModel in `graph` (events, model.ts): hovering
 * a bar lights its node, clicking a bar selects the node (its panel opens), and clicking
 * a node there marks its bars here.  Everything is in the model, so the chart works
 * with no kernel (a reopened notebook).  State: the drawn bars by row, the horizontal
 * scale (px per µs) and pan offset, the marked op name.  Names go in `textContent`.
 */
import { DOMWidgetModel, DOMWidgetView } from '@jupyter-widgets/base';

import { DEAD, ERROR, FOCUS, HOVER, ITimeline, SELECTED, WAIT } from './model';
import { formatUs, htmlEl, svgEl } from './svg';

/** Width of the lane labels, the header (step titles and the time axis), a lane. */
const LABEL_W = 130;
const HEADER = 36;
const LANE_H = 22;
const BAR_H = 16;

/** A round tick interval (1, 2 or 5 times a power of ten) of at least `us`. */
function niceStep(us: number): number {
  const p = Math.pow(10, Math.floor(Math.log10(Math.max(us, 1e-3))));
  for (const k of [1, 2, 5, 10]) {
    if (k * p >= us) {
      return k * p;
    }
  }
  return 10 * p;
}

/** The widget's view. */
export class TimelineView extends DOMWidgetView {
  private root!: HTMLDivElement;
  private status!: HTMLSpanElement;
  private canvas!: HTMLDivElement;
  private svg!: SVGSVGElement;
  private axis!: SVGGElement;
  private scene!: SVGGElement;
  private tip!: HTMLDivElement;
  private bars: SVGRectElement[] = [];
  private flowEls: SVGLineElement[] = [];
  private stepTitles: SVGTextElement[] = [];
  private stepBands: SVGRectElement[] = [];
  /** Where each step starts on the shared axis (µs), steps laid end to end with gaps. */
  private offsets: number[] = [];
  private total = 1;
  private scale = 1;
  private x0 = 0;
  private marked = '';
  private graph: DOMWidgetModel | null = null;

  /** Build the DOM once; `draw` fills it from the model. */
  render(): void {
    this.el.classList.add('fl-timeline-view');
    this.root = htmlEl('div', 'fl-root', this.el);
    const toolbar = htmlEl('div', 'fl-toolbar', this.root);
    htmlEl('span', 'fl-label', toolbar, 'timeline');
    const zoomIn = htmlEl('button', 'fl-button fl-zoom-in', toolbar, 'zoom in');
    zoomIn.addEventListener('click', () => this.zoom(2, this.plotWidth() / 2));
    const zoomOut = htmlEl('button', 'fl-button fl-zoom-out', toolbar, 'zoom out');
    zoomOut.addEventListener('click', () => this.zoom(0.5, this.plotWidth() / 2));
    const fit = htmlEl('button', 'fl-button fl-fit', toolbar, 'fit');
    fit.addEventListener('click', () => this.fit());
    const exp = htmlEl('button', 'fl-button fl-export', toolbar, 'Perfetto JSON');
    exp.title = 'download what is shown as Chrome trace JSON (open it in ui.perfetto.dev)';
    exp.addEventListener('click', () => this.download());
    this.status = htmlEl('span', 'fl-status', toolbar);
    this.canvas = htmlEl('div', 'fl-canvas fl-timeline-canvas', this.root);
    this.svg = svgEl('svg', { class: 'fl-svg fl-timeline-svg', width: '100%', height: '100%' }, this.canvas);
    this.tip = htmlEl('div', 'fl-tip', this.canvas);
    this.tip.style.display = 'none';
    this.installPanZoom();

    this.listenTo(this.model, 'change:timeline', () => this.draw());
    this.listenTo(this.model, 'change:graph', () => this.linkGraph());
    this.listenTo(this.model, 'change:view_height', () => this.sizeToModel());
    this.listenTo(this.model, 'comm_live_update', () => this.showStatus());
    this.sizeToModel();
    this.linkGraph();
    this.draw();
  }

  private get data(): ITimeline | undefined {
    const t = this.model.get('timeline') as ITimeline;
    return t && t.ops ? t : undefined;
  }

  private sizeToModel(): void {
    this.root.style.height = `${Number(this.model.get('view_height')) || 260}px`;
  }

  private linkGraph(): void {
    if (this.graph) {
      this.stopListening(this.graph, SELECTED);
    }
    this.graph = (this.model.get('graph') as DOMWidgetModel | null) || null;
    if (this.graph) {
      this.listenTo(this.graph, SELECTED, (name: string) => this.mark(name, false));
    }
  }

  private showStatus(): void {
    const t = this.data;
    if (!t) {
      this.status.textContent = 'no trace';
      return;
    }
    const shown = t.steps.length < t.all_steps ? `${t.steps.length} of ${t.all_steps} steps` : `${t.steps.length} step${t.steps.length === 1 ? '' : 's'}`;
    let text = `${shown} · ${t.ops.length} op runs · ${t.flows.length} transfers`;
    if (this.marked) {
      const k = this.bars.filter(b => b.classList.contains('fl-bar-marked')).length;
      text += ` · ${this.marked}: ${k} bar${k === 1 ? '' : 's'}`;
    }
    if (!this.model.comm_live) {
      text += ' · a saved timeline (no kernel)';
    }
    this.status.textContent = text;
  }

  private plotWidth(): number {
    return Math.max(this.svg.getBoundingClientRect().width - LABEL_W - 10, 50);
  }

  /** (Re)build the chart from the `timeline` trait. */
  private draw(): void {
    this.svg.textContent = '';
    this.bars = [];
    this.flowEls = [];
    this.stepTitles = [];
    this.stepBands = [];
    const t = this.data;
    if (!t) {
      this.showStatus();
      return;
    }
    const longest = Math.max(1, ...t.steps.map(s => s[2]));
    const gap = t.steps.length > 1 ? longest * 0.06 : 0;
    this.offsets = [];
    let at = 0;
    for (const s of t.steps) {
      this.offsets.push(at);
      at += Math.max(s[2], 1e-3) + gap;
    }
    this.total = Math.max(at - gap, 1e-3);
    const height = HEADER + LANE_H * t.lanes.length + 8;
    this.svg.setAttribute('height', String(Math.max(height, 60)));

    const defs = svgEl('defs', {}, this.svg);
    const clip = svgEl('clipPath', { id: `fl-tl-clip-${this.cid}` }, defs);
    svgEl('rect', { x: LABEL_W, y: 0, width: 100000, height: 100000 }, clip);
    const mk = svgEl('marker', {
      id: `fl-tl-arrow-${this.cid}`, viewBox: '0 0 10 10', refX: 9, refY: 5,
      markerWidth: 7, markerHeight: 7, markerUnits: 'userSpaceOnUse', orient: 'auto'
    }, defs);
    svgEl('path', { d: 'M 0 0 L 10 5 L 0 10 z', class: 'fl-flow-head' }, mk);

    // Lanes: a stripe and a label each (device short name, thread tag).
    const gLanes = svgEl('g', { class: 'fl-lanes' }, this.svg);
    t.lanes.forEach((lane, i) => {
      const y = HEADER + i * LANE_H;
      svgEl('rect', { x: 0, y, width: '100%', height: LANE_H, class: `fl-lane fl-lane-${i % 2}` }, gLanes);
      const dev = t.devices[lane[0]];
      svgEl('rect', { x: 4, y: y + 6, width: 10, height: 10, class: 'fl-lane-swatch' }, gLanes).style.fill = dev[2];
      const g = svgEl('g', { class: 'fl-lane-head' }, gLanes);
      const label = svgEl('text', { x: 18, y: y + LANE_H / 2 + 4, class: 'fl-lane-label' }, g);
      label.textContent = lane[1] ? `${dev[1]} ${lane[1]}` : dev[1];
      const tip = svgEl('title', {}, g);
      tip.textContent = `${dev[0]}, ${lane[2]}`;
    });

    const plot = svgEl('g', { 'clip-path': `url(#fl-tl-clip-${this.cid})` }, this.svg);
    this.axis = svgEl('g', { class: 'fl-axis' }, plot);
    this.scene = svgEl('g', { class: 'fl-tl-scene' }, plot);
    t.steps.forEach((s, i) => {
      const band = svgEl('rect', { y: HEADER - 2, height: LANE_H * t.lanes.length + 4, class: 'fl-step-band' }, this.scene);
      this.stepBands.push(band);
      const title = svgEl('text', { y: 12, class: 'fl-step-title' }, this.scene);
      title.textContent = `step ${s[3]} · ${formatUs(s[2])}`;
      title.setAttribute('data-step', String(i));
      this.stepTitles.push(title);
    });
    const gBars = svgEl('g', { class: 'fl-bars' }, this.scene);
    t.ops.forEach((r, row) => {
      const [lane, , , , name, type, flags] = r;
      const cls = ['fl-bar'];
      if (flags & WAIT) {
        cls.push('fl-bar-wait');
      }
      if (flags & DEAD) {
        cls.push('fl-bar-dead');
      }
      if (flags & ERROR) {
        cls.push('fl-bar-error');
      }
      const rect = svgEl('rect', { y: HEADER + lane * LANE_H + (LANE_H - BAR_H) / 2, height: BAR_H, class: cls.join(' ') }, gBars);
      rect.style.fill = t.colors[type];
      rect.setAttribute('data-row', String(row));
      rect.setAttribute('data-name', t.names[name]);
      this.bars.push(rect);
    });
    const gFlows = svgEl('g', { class: 'fl-flows' }, this.scene);
    for (const f of t.flows) {
      const line = svgEl('line', { class: 'fl-flow', 'marker-end': `url(#fl-tl-arrow-${this.cid})` }, gFlows);
      const tip = svgEl('title', {}, line);
      tip.textContent = `${f[3]}: ${f[2]} B from ${t.names[t.ops[f[0]][4]]} to ${t.names[t.ops[f[1]][4]]}`;
      this.flowEls.push(line);
    }
    gBars.addEventListener('pointerover', ev => this.hover(ev));
    gBars.addEventListener('pointermove', ev => this.moveTip(ev));
    gBars.addEventListener('pointerout', () => this.unhover());
    gBars.addEventListener('click', ev => {
      const row = this.rowOf(ev.target);
      if (row >= 0 && !this.dragged) {
        const name = t.names[t.ops[row][4]];
        this.mark(name, true);
        this.graph?.trigger(FOCUS, name);
      }
    });
    if (this.marked) {
      this.mark(this.marked, false);
    }
    this.fit();
  }

  /** Put every bar, flow, step title and tick where the scale and offset say. */
  private place(): void {
    const t = this.data;
    if (!t) {
      return;
    }
    const X = (stepIndex: number, us: number): number => LABEL_W + this.x0 + (this.offsets[stepIndex] + us) * this.scale;
    t.ops.forEach((r, row) => {
      const bar = this.bars[row];
      bar.setAttribute('x', X(r[1], r[2]).toFixed(2));
      bar.setAttribute('width', Math.max(r[3] * this.scale, 1).toFixed(2));
    });
    t.flows.forEach((f, i) => {
      const s = t.ops[f[0]];
      const v = t.ops[f[1]];
      const line = this.flowEls[i];
      line.setAttribute('x1', X(s[1], s[2] + s[3] / 2).toFixed(2));
      line.setAttribute('y1', String(HEADER + s[0] * LANE_H + LANE_H / 2));
      line.setAttribute('x2', X(v[1], v[2] + v[3]).toFixed(2));
      line.setAttribute('y2', String(HEADER + v[0] * LANE_H + LANE_H / 2));
    });
    t.steps.forEach((s, i) => {
      this.stepBands[i].setAttribute('x', X(i, 0).toFixed(2));
      this.stepBands[i].setAttribute('width', Math.max(s[2] * this.scale, 1).toFixed(2));
      this.stepTitles[i].setAttribute('x', (X(i, 0) + 2).toFixed(2));
    });
    // Ticks: times from each step's start, about every 90 px.
    this.axis.textContent = '';
    const every = niceStep(90 / this.scale);
    const bottom = HEADER + LANE_H * t.lanes.length;
    t.steps.forEach((s, i) => {
      for (let us = 0; us <= s[2] + 1e-9; us += every) {
        const x = X(i, us);
        svgEl('line', { x1: x, x2: x, y1: HEADER - 4, y2: bottom, class: 'fl-tick' }, this.axis);
        if (us > 0) {
          svgEl('text', { x: x + 2, y: HEADER - 6, class: 'fl-tick-label' }, this.axis).textContent = formatUs(us);
        }
      }
    });
  }

  /** Show every step across the width. */
  fit(): void {
    const w = this.svg.getBoundingClientRect().width;
    if (w === 0) {
      window.requestAnimationFrame(() => {
        if (this.svg.getBoundingClientRect().width > 0) {
          this.fit();
        }
      });
      return;
    }
    this.scale = this.plotWidth() / this.total;
    this.x0 = 0;
    this.place();
    this.showStatus();
  }

  /** Zoom by `k` keeping the time under `px` (from the plot's left edge) in place. */
  private zoom(k: number, px: number): void {
    const s = Math.min(Math.max(this.scale * k, 1e-6), 1e4);
    this.x0 = px - ((px - this.x0) * s) / this.scale;
    this.scale = s;
    this.place();
  }

  private dragged = false;

  private installPanZoom(): void {
    let down = false;
    let lastX = 0;
    let moved = 0;
    this.svg.addEventListener(
      'wheel',
      ev => {
        ev.preventDefault();
        const box = this.svg.getBoundingClientRect();
        this.zoom(Math.exp(-ev.deltaY * 0.002), ev.clientX - box.left - LABEL_W);
      },
      { passive: false }
    );
    this.svg.addEventListener('pointerdown', ev => {
      down = true;
      lastX = ev.clientX;
      moved = 0;
      this.dragged = false;
    });
    window.addEventListener('pointermove', ev => {
      if (!down) {
        return;
      }
      moved += Math.abs(ev.clientX - lastX);
      this.dragged = moved > 3;
      this.x0 += ev.clientX - lastX;
      lastX = ev.clientX;
      if (this.dragged) {
        this.place();
      }
    });
    window.addEventListener('pointerup', () => {
      down = false;
    });
  }

  // --- hover, marks and the link with the graph ---------------------------------------
  private rowOf(target: EventTarget | null): number {
    const el = target as Element | null;
    const row = el && el.getAttribute ? el.getAttribute('data-row') : null;
    return row === null ? -1 : Number(row);
  }

  private hover(ev: PointerEvent): void {
    const t = this.data;
    const row = this.rowOf(ev.target);
    if (!t || row < 0) {
      return;
    }
    const [lane, step, start, dur, name, type, flags, outs] = t.ops[row];
    const dev = t.devices[t.lanes[lane][0]];
    const rows: [string, string][] = [
      ['type', t.types[type]],
      ['device', dev[0]],
      ['thread', t.lanes[lane][2]],
      ['step', `${t.steps[step][3]} (id ${t.steps[step][0]})`],
      ['start', `+${formatUs(start)}`],
      ['duration', formatUs(dur)]
    ];
    if (outs) {
      rows.push(['outputs', outs]);
    }
    if (flags & WAIT) {
      rows.push(['note', 'waiting (a Recv or a queue op)']);
    }
    if (flags & DEAD) {
      rows.push(['note', 'dead (an untaken branch)']);
    }
    for (const f of t.flows) {
      if (f[0] === row || f[1] === row) {
        rows.push(['transfer', `${f[3]}: ${f[2]} B`]);
      }
    }
    this.tip.textContent = '';
    htmlEl('div', 'fl-tip-title', this.tip, t.names[name]);
    const table = htmlEl('table', 'fl-panel-table', this.tip);
    for (const [k, v] of rows) {
      const tr = htmlEl('tr', '', table);
      htmlEl('td', 'fl-key', tr, k);
      htmlEl('td', 'fl-value', tr, v);
    }
    this.tip.style.display = '';
    this.moveTip(ev);
    this.bars[row].classList.add('fl-bar-hover');
    this.graph?.trigger(HOVER, t.names[name]);
  }

  /** Beside the pointer (right of it, or left near the right edge), inside the chart. */
  private moveTip(ev: PointerEvent): void {
    const box = this.canvas.getBoundingClientRect();
    const w = this.tip.offsetWidth;
    const h = this.tip.offsetHeight;
    const px = ev.clientX - box.left;
    const py = ev.clientY - box.top;
    const x = px + 16 + w <= box.width ? px + 16 : Math.max(px - 16 - w, 0);
    const y = Math.min(Math.max(py - h / 2, 0), Math.max(box.height - h, 0));
    this.tip.style.left = `${x}px`;
    this.tip.style.top = `${y + this.canvas.scrollTop}px`;
  }

  private unhover(): void {
    this.tip.style.display = 'none';
    for (const b of this.svg.querySelectorAll('.fl-bar-hover')) {
      b.classList.remove('fl-bar-hover');
    }
    this.graph?.trigger(HOVER, '');
  }

  /** Mark the bars of op `name` (or of the ops in scope `name`). */
  private mark(name: string, fromHere: boolean): void {
    this.marked = name;
    const prefix = `${name}/`;
    for (const b of this.bars) {
      const n = b.getAttribute('data-name') || '';
      b.classList.toggle('fl-bar-marked', !!name && (n === name || (!fromHere && n.startsWith(prefix))));
    }
    this.showStatus();
  }

  // --- export -------------------------------------------------------------------------
  /** What is shown as Chrome trace event JSON (the format Perfetto opens). */
  chromeTrace(): object {
    const t = this.data;
    const events: object[] = [];
    if (!t) {
      return { traceEvents: events };
    }
    const t0 = t.steps.length ? Math.min(...t.steps.map(s => s[1])) : 0;
    t.devices.forEach((d, i) => {
      events.push({ ph: 'M', name: 'process_name', pid: i + 1, tid: 0, args: { name: d[0] } });
    });
    t.lanes.forEach((lane, i) => {
      events.push({ ph: 'M', name: 'thread_name', pid: lane[0] + 1, tid: i + 1, args: { name: lane[2] } });
    });
    t.ops.forEach(r => {
      events.push({
        ph: 'X', name: t.names[r[4]], cat: t.types[r[5]], pid: t.lanes[r[0]][0] + 1, tid: r[0] + 1,
        ts: t.steps[r[1]][1] - t0 + r[2], dur: r[3], args: { step: t.steps[r[1]][0], outputs: r[7] }
      });
    });
    t.flows.forEach((f, i) => {
      const s = t.ops[f[0]];
      const v = t.ops[f[1]];
      const common = { name: f[3], cat: 'transfer', id: i + 1 };
      events.push({ ...common, ph: 's', pid: t.lanes[s[0]][0] + 1, tid: s[0] + 1, ts: t.steps[s[1]][1] - t0 + s[2] });
      events.push({ ...common, ph: 'f', bp: 'e', pid: t.lanes[v[0]][0] + 1, tid: v[0] + 1, ts: t.steps[v[1]][1] - t0 + v[2] + v[3] });
    });
    return { traceEvents: events, displayTimeUnit: 'ns' };
  }

  private download(): void {
    const blob = new Blob([JSON.stringify(this.chromeTrace())], { type: 'application/json' });
    const a = document.createElement('a');
    a.href = URL.createObjectURL(blob);
    a.download = 'flowlab-trace.json';
    a.click();
    window.setTimeout(() => URL.revokeObjectURL(a.href), 1000);
  }
}
