/**
 * GraphView: draws the kernel's laid-out stage (see model.ts) as SVG, with pan and
 * zoom, scopes that open (double-click) and close (click the box's label), search,
 * a device legend, a stage switch, a side panel for the clicked node, and the live
 * overlay: running nodes lit, finished ones fading, Send/Recv edges pulsing with bytes.
 *
 * State: the drawn elements by node id and edge index (rebuilt when `model` changes),
 * the pan/zoom transform, the selected node.  Every name is put in `textContent`.
 * Without a live kernel (a reopened notebook, a restarted kernel) the view draws the
 * saved `model` and says so in its status line; controls that need the kernel are off.
 */
import { DOMWidgetView } from '@jupyter-widgets/base';

import { FOCUS, HOVER, IGraphLayout, IGraphNode, ITiming, KernelMessage, SELECTED } from './model';
import { formatBytes, formatUs, htmlEl, splinePath, svgEl, svgText } from './svg';

/** Fill of nodes with no device or several (as in the static pictures). */
const NO_DEVICE = '#f2f2f2';
/** How long a finished node stays lit, and a transfer edge pulses (ms). */
const FADE_MS = 900;

/** The widget's view. */
export class GraphView extends DOMWidgetView {
  private root!: HTMLDivElement;
  private toolbar!: HTMLDivElement;
  private stageSelect!: HTMLSelectElement;
  private searchBox!: HTMLInputElement;
  private status!: HTMLSpanElement;
  private timing!: HTMLSpanElement;
  private measured: number | undefined = undefined;
  private svg!: SVGSVGElement;
  private scene!: SVGGElement;
  private legend!: HTMLDivElement;
  private panel!: HTMLDivElement;
  private nodeEls = new Map<string, SVGGElement>();
  private edgeEls: SVGPathElement[] = [];
  private edgeLabels = new Map<number, SVGTextElement>();
  private nodes = new Map<string, IGraphNode>();
  private scale = 1;
  private tx = 0;
  private ty = 0;
  private selected = '';
  private selectedName = '';
  private stage = '';
  private steps = 0;
  private liveTimer = 0;

  /** Build the DOM once; `draw` fills the scene from the model. */
  render(): void {
    this.el.classList.add('fl-graph-view');
    this.root = htmlEl('div', 'fl-root', this.el);
    this.toolbar = htmlEl('div', 'fl-toolbar', this.root);
    htmlEl('span', 'fl-label', this.toolbar, 'stage');
    this.stageSelect = htmlEl('select', 'fl-stage', this.toolbar);
    this.stageSelect.addEventListener('change', () => {
      // Every stage is laid out already: switching needs no kernel (it may be busy).
      this.stage = this.stageSelect.value;
      this.draw();
      if (this.live) {
        this.send({ t: 'stage', stage: this.stage });
      }
    });
    this.searchBox = htmlEl('input', 'fl-search', this.toolbar);
    this.searchBox.type = 'search';
    this.searchBox.placeholder = 'search ops by name';
    this.searchBox.addEventListener('input', () => this.search());
    const fit = htmlEl('button', 'fl-button fl-fit', this.toolbar, 'fit');
    fit.addEventListener('click', () => this.fit());
    this.timing = htmlEl('span', 'fl-timing', this.toolbar);
    this.status = htmlEl('span', 'fl-status', this.toolbar);

    const body = htmlEl('div', 'fl-body', this.root);
    const canvas = htmlEl('div', 'fl-canvas', body);
    this.svg = svgEl('svg', { class: 'fl-svg', width: '100%', height: '100%' }, canvas);
    this.scene = svgEl('g', { class: 'fl-scene' }, this.svg);
    this.legend = htmlEl('div', 'fl-legend', canvas);
    this.panel = htmlEl('div', 'fl-panel', body);
    htmlEl('div', 'fl-panel-hint', this.panel, 'Click a node to see its details.');
    this.installPanZoom();

    this.stage = String(this.model.get('stage') || '');
    this.listenTo(this.model, 'change:layouts', () => this.draw());
    this.listenTo(this.model, 'change:stage', () => {
      this.stage = String(this.model.get('stage') || '');
      this.drawStages();
      this.draw();
    });
    this.listenTo(this.model, 'change:stage_names change:missing', () => this.drawStages());
    this.listenTo(this.model, 'change:view_height', () => this.sizeToModel());
    this.listenTo(this.model, 'comm_live_update', () => this.showConnection());
    this.listenTo(this.model, 'change:marks', () => this.applyMarks());
    this.listenTo(this.model, 'change:timing', () => this.showTiming());
    this.listenTo(this.model, 'change:device_names', () => this.draw());
    // Linked views (a timeline, a stepper) speak through events on this model.
    this.listenTo(this.model, HOVER, (name: string) => this.light(name));
    this.listenTo(this.model, FOCUS, (name: string) => {
      const id = this.idOf(name);
      if (id) {
        this.select(id);
      }
    });
    this.model.on('msg:custom', (msg: KernelMessage) => this.onMessage(msg));
    this.sizeToModel();
    this.drawStages();
    this.draw();
    this.showTiming();
    this.showConnection();
  }

  /** Forget the live timer with the view. */
  remove(): void {
    window.clearTimeout(this.liveTimer);
    return super.remove();
  }

  private get live(): boolean {
    return this.model.comm_live;
  }

  /** The laid-out stage shown. */
  private current(): IGraphLayout | undefined {
    const all = (this.model.get('layouts') as { [stage: string]: IGraphLayout }) || {};
    return all[this.stage];
  }

  private sizeToModel(): void {
    const h = Number(this.model.get('view_height')) || 520;
    this.root.style.height = `${h}px`;
  }

  /** The status line: steps seen, or why nothing is live. */
  private showConnection(): void {
    const live = this.live;
    this.root.classList.toggle('fl-offline', !live);
    if (!live) {
      this.status.textContent =
        'kernel gone: a saved picture (run the cell again for a live view)';
      this.scene.querySelectorAll('.fl-running').forEach(el => el.classList.remove('fl-running'));
    } else {
      this.status.textContent = this.steps ? `${this.steps} steps seen` : 'live';
    }
  }

  private drawStages(): void {
    const names = (this.model.get('stage_names') as string[]) || [];
    const current = this.stage;
    const missing = (this.model.get('missing') as { [k: string]: string }) || {};
    this.stageSelect.textContent = '';
    for (const name of names) {
      const opt = htmlEl('option', '', this.stageSelect, name);
      opt.value = name;
      opt.selected = name === current;
    }
    for (const [name, why] of Object.entries(missing)) {
      const opt = htmlEl('option', '', this.stageSelect, `${name} (not shown)`);
      opt.disabled = true;
      opt.title = why;
    }
  }

  /** (Re)draw the scene from the `model` trait. */
  private draw(): void {
    const m = this.current();
    this.scene.textContent = '';
    this.nodeEls.clear();
    this.nodes.clear();
    this.edgeEls = [];
    this.edgeLabels.clear();
    this.legend.textContent = '';
    if (!m || !m.nodes) {
      return;
    }
    this.svg.setAttribute('data-stage', this.stage);
    const gClusters = svgEl('g', { class: 'fl-clusters' }, this.scene);
    const gEdges = svgEl('g', { class: 'fl-edges' }, this.scene);
    const gNodes = svgEl('g', { class: 'fl-nodes' }, this.scene);
    svgEl('defs', {}, this.scene).appendChild(this.arrowMarker());

    for (const c of m.clusters) {
      const g = svgEl('g', { class: `fl-cluster fl-cluster-${c.kind}` }, gClusters);
      const r = svgEl('rect', { x: c.x, y: c.y, width: c.w, height: c.h, rx: 6 }, g);
      if (c.kind === 'partition' && c.fill) {
        r.style.fill = c.fill;
      }
      const title = svgText([c.label], c.x + c.w / 2, c.y + 10, g, 'fl-cluster-label');
      if (c.kind === 'scope') {
        title.classList.add('fl-collapsible');
        const tip = svgEl('title', {}, title);
        tip.textContent = `${c.name}: click to collapse`;
        title.addEventListener('click', ev => {
          ev.stopPropagation();
          if (this.live) {
            this.send({ t: 'collapse', scope: c.name, stage: this.stage });
          }
        });
      }
    }

    m.edges.forEach((e, i) => {
      const p = svgEl(
        'path',
        { d: splinePath(e.pts, e.tip), class: `fl-edge fl-edge-${e.kind}`, 'marker-end': 'url(#fl-arrow)' },
        gEdges
      );
      p.setAttribute('data-src', e.src);
      p.setAttribute('data-dst', e.dst);
      this.edgeEls.push(p);
      if (e.label && e.lp) {
        svgText(e.label, e.lp[0], e.lp[1], gEdges, 'fl-edge-label');
      }
      if (e.kind === 't' || e.kind === 'x') {
        // Live bytes go on a line of their own, under the static label if there is one.
        const mid = Math.floor(e.pts.length / 4) * 2;
        const [bx, by] = e.lp ? [e.lp[0], e.lp[1] + 6 + 6 * (e.label?.length ?? 1)] : [e.pts[mid] + 8, e.pts[mid + 1]];
        const t = svgEl('text', { x: bx, y: by, class: 'fl-edge-bytes', 'text-anchor': 'start' }, gEdges);
        this.edgeLabels.set(i, t);
      }
    });

    for (const n of m.nodes) {
      this.nodes.set(n.id, n);
      const g = svgEl('g', { class: `fl-node fl-node-${n.kind}` }, gNodes);
      g.setAttribute('data-id', n.id);
      g.setAttribute('data-name', n.name);
      const fill = n.dev >= 0 && m.devices[n.dev] ? m.devices[n.dev][2] : NO_DEVICE;
      const shape = this.shapeFor(n);
      shape.style.fill = fill;
      g.appendChild(shape);
      svgText(n.label, n.x, n.y, g, 'fl-node-label');
      const tip = svgEl('title', {}, g);
      tip.textContent = n.kind === 'scope' ? `${n.name}: double-click to open` : `${n.name} (${n.op})`;
      if (n.state) {
        g.classList.add(`fl-state-${n.state}`);
      }
      g.addEventListener('click', ev => {
        ev.stopPropagation();
        this.select(n.id);
      });
      if (n.kind === 'scope') {
        g.addEventListener('dblclick', ev => {
          ev.stopPropagation();
          if (this.live) {
            this.send({ t: 'expand', scope: n.name, stage: this.stage });
          }
        });
      }
      this.nodeEls.set(n.id, g);
    }

    this.drawAux(m, gEdges);

    for (const [name, short, color] of m.devices) {
      const item = htmlEl('div', 'fl-legend-item', this.legend);
      const sw = htmlEl('span', 'fl-swatch', item);
      sw.style.background = color;
      htmlEl('span', 'fl-legend-name', item, short);
      item.title = name;
    }
    if (m.devices.length === 0) {
      this.legend.style.display = 'none';
    } else {
      this.legend.style.display = '';
    }
    // Ids are per layout: the selection follows the node's name to the new one.
    const again = m.nodes.find(n => n.name === this.selectedName);
    this.selected = again ? again.id : '';
    if (again) {
      this.nodeEls.get(again.id)?.classList.add('fl-selected');
      this.showNode(again); // the kernel's rows may be new (a move, a trace)
    }
    this.applyMarks();
    this.fit();
    this.search();
  }

  /** The drawn node of op `name`: its own, or the collapsed scope holding it. */
  private idOf(name: string): string {
    let best = '';
    let bestLen = -1;
    for (const [id, n] of this.nodes) {
      if (n.name === name) {
        return id;
      }
      if (n.kind === 'scope' && name.startsWith(`${n.name}/`) && n.name.length > bestLen) {
        best = id;
        bestLen = n.name.length;
      }
    }
    return best;
  }

  /** Light the node of op `name` (a linked view's hover); '' puts the light out. */
  private light(name: string): void {
    for (const el of this.scene.querySelectorAll('.fl-linked')) {
      el.classList.remove('fl-linked');
    }
    const id = name ? this.idOf(name) : '';
    if (id) {
      this.nodeEls.get(id)?.classList.add('fl-linked');
    }
  }

  /**
   * The Stepper's states (`marks` trait: stage -> id -> done / ready / next / stopped /
   * error / dead) over the picture's own: the op to run next, where it stopped.
   */
  private applyMarks(): void {
    const all = (this.model.get('marks') as { [stage: string]: { [id: string]: string } }) || {};
    const marks = all[this.stage];
    if (!marks) {
      return;
    }
    for (const [id, el] of this.nodeEls) {
      for (const c of Array.from(el.classList)) {
        if (c.startsWith('fl-state-')) {
          el.classList.remove(c);
        }
      }
      const state = marks[id] ?? this.nodes.get(id)?.state;
      if (state) {
        el.classList.add(`fl-state-${state}`);
      }
    }
  }

  /** Stubs for the inputs of high fan-out ops: a short arrow and the source's name. */
  private drawAux(m: IGraphLayout, parent: SVGGElement): void {
    const perDst = new Map<string, number>();
    for (const a of m.aux ?? []) {
      const src = this.nodes.get(a.src);
      const dst = this.nodes.get(a.dst);
      if (!src || !dst) {
        continue;
      }
      const k = perDst.get(a.dst) ?? 0;
      perDst.set(a.dst, k + 1);
      const x1 = dst.x - dst.w / 2 + 6 + k * 10;
      const y1 = dst.y - dst.h / 2;
      const g = svgEl('g', { class: `fl-aux fl-edge-${a.kind}` }, parent);
      g.setAttribute('data-src', a.src);
      g.setAttribute('data-dst', a.dst);
      svgEl('path', { d: `M${x1 - 10},${y1 - 14} L${x1},${y1}`, class: `fl-edge fl-edge-${a.kind}`, 'marker-end': 'url(#fl-arrow)' }, g);
      const short = src.name.split('/').slice(-2).join('/');
      const t = svgEl('text', { x: x1 - 12, y: y1 - 16, class: 'fl-aux-label', 'text-anchor': 'end' }, g);
      t.textContent = short;
      const tip = svgEl('title', {}, g);
      tip.textContent = `input from ${src.name} (it feeds many nodes: drawn once, click to select it)`;
      g.addEventListener('click', ev => {
        ev.stopPropagation();
        this.select(a.src);
      });
    }
  }

  private arrowMarker(): SVGMarkerElement {
    const mk = svgEl('marker', {
      id: 'fl-arrow',
      viewBox: '0 0 10 10',
      refX: 9,
      refY: 5,
      markerWidth: 6,
      markerHeight: 6,
      // Arrowheads keep their size when a pulsing edge gets wider.
      markerUnits: 'userSpaceOnUse',
      orient: 'auto-start-reverse'
    });
    svgEl('path', { d: 'M 0 0 L 10 5 L 0 10 z', class: 'fl-arrowhead' }, mk);
    return mk;
  }

  private shapeFor(n: IGraphNode): SVGElement {
    const x = n.x - n.w / 2;
    const y = n.y - n.h / 2;
    if (n.shape === 'point') {
      return svgEl('circle', { cx: n.x, cy: n.y, r: 4, class: 'fl-shape' });
    }
    if (n.shape === 'ellipse' || n.shape === 'cylinder') {
      return svgEl('ellipse', { cx: n.x, cy: n.y, rx: n.w / 2, ry: n.h / 2, class: 'fl-shape' });
    }
    const rx = n.kind === 'scope' ? 2 : n.kind === 'op' ? 5 : 0;
    return svgEl('rect', { x, y, width: n.w, height: n.h, rx, class: 'fl-shape' });
  }

  // --- pan and zoom ------------------------------------------------------------------
  private applyTransform(): void {
    this.scene.setAttribute('transform', `translate(${this.tx},${this.ty}) scale(${this.scale})`);
  }

  /** Fit the whole stage into the canvas. */
  fit(): void {
    const m = this.current();
    const box = this.svg.getBoundingClientRect();
    if (!m || !m.size || box.width === 0) {
      // Not in the document yet: fit once it is.
      window.requestAnimationFrame(() => {
        if (this.svg.getBoundingClientRect().width > 0) {
          this.fit();
        }
      });
      return;
    }
    const [w, h] = m.size;
    const byWidth = box.width / (w + 20);
    this.scale = Math.min(byWidth, box.height / (h + 20), 1.5);
    if (this.scale < 0.5 && byWidth > this.scale) {
      // A tall graph (an unrolled loop) fitted whole is unreadable: fit its width (up to
      // half size) and show its top; drag or scroll for the rest.
      this.scale = Math.min(byWidth, 0.5);
    }
    this.tx = (box.width - w * this.scale) / 2;
    this.ty = 10;
    this.applyTransform();
  }

  private installPanZoom(): void {
    let dragging = false;
    let lastX = 0;
    let lastY = 0;
    this.svg.addEventListener(
      'wheel',
      ev => {
        ev.preventDefault();
        const box = this.svg.getBoundingClientRect();
        const px = ev.clientX - box.left;
        const py = ev.clientY - box.top;
        const k = Math.exp(-ev.deltaY * 0.0015);
        const s = Math.min(Math.max(this.scale * k, 0.02), 8);
        this.tx = px - ((px - this.tx) * s) / this.scale;
        this.ty = py - ((py - this.ty) * s) / this.scale;
        this.scale = s;
        this.applyTransform();
      },
      { passive: false }
    );
    this.svg.addEventListener('pointerdown', ev => {
      dragging = true;
      lastX = ev.clientX;
      lastY = ev.clientY;
      this.svg.classList.add('fl-dragging');
    });
    window.addEventListener('pointermove', ev => {
      if (!dragging) {
        return;
      }
      this.tx += ev.clientX - lastX;
      this.ty += ev.clientY - lastY;
      lastX = ev.clientX;
      lastY = ev.clientY;
      this.applyTransform();
    });
    window.addEventListener('pointerup', () => {
      dragging = false;
      this.svg.classList.remove('fl-dragging');
    });
  }

  // --- search and selection ----------------------------------------------------------
  private search(): void {
    const q = this.searchBox.value.trim().toLowerCase();
    for (const [id, el] of this.nodeEls) {
      const n = this.nodes.get(id);
      el.classList.toggle('fl-match', !!q && !!n && n.name.toLowerCase().includes(q));
    }
    if (q && this.live) {
      this.send({ t: 'search', q, stage: this.stage }); // ops in collapsed scopes: the kernel knows
    }
  }

  private select(id: string): void {
    if (this.selected) {
      this.nodeEls.get(this.selected)?.classList.remove('fl-selected');
    }
    this.selected = id;
    this.nodeEls.get(id)?.classList.add('fl-selected');
    const n = this.nodes.get(id);
    if (!n) {
      return;
    }
    this.selectedName = n.name;
    this.model.trigger(SELECTED, n.name);
    if (this.live && n.kind !== 'scope') {
      this.send({ t: 'select', name: n.name, stage: this.stage }); // watch its values
    }
    this.showNode(n);
  }

  /** The side panel of node `n`: the kernel's rows, and the device menu. */
  private showNode(n: IGraphNode): void {
    const strings = this.current()?.strings ?? [];
    const rows: [string, string, string][] = n.info
      ? n.info.map(([s, k, v]) => [strings[s] ?? '', strings[k] ?? '', strings[v] ?? ''])
      : [
          ['op', 'name', n.name],
          ['op', 'type', n.op],
          ['placement', 'device', this.deviceName(n)]
        ];
    this.showDetails(n.id, rows);
    this.moveMenu(n);
  }

  /**
   * "Placement you can try": a menu of the session's devices for the node (an op, or
   * every op of a collapsed scope); the kernel places and partitions the step again
   * with that request, and every stage is drawn anew.
   */
  private moveMenu(n: IGraphNode): void {
    const devices = (this.model.get('device_names') as string[]) || [];
    if (!devices.length || n.kind === 'send' || n.kind === 'recv') {
      return;
    }
    htmlEl('div', 'fl-panel-section', this.panel, 'try another device');
    const row = htmlEl('div', 'fl-move', this.panel);
    const menu = htmlEl('select', 'fl-move-device', row);
    const keep = htmlEl('option', '', menu, n.kind === 'scope' ? 'move every op of the scope to...' : 'move to...');
    keep.value = '';
    for (const d of devices) {
      const opt = htmlEl('option', '', menu, d.replace(/^.*\/device:/, ''));
      opt.value = d;
    }
    const back = htmlEl('option', '', menu, '(its own request)');
    back.value = '-';
    menu.disabled = !this.live;
    menu.title = this.live ? 'the session places the step again with this request' : 'needs the kernel';
    menu.addEventListener('change', () => {
      if (!menu.value || !this.live) {
        return;
      }
      this.status.textContent = `placing ${n.name}...`;
      this.send({ t: 'place', name: n.name, device: menu.value === '-' ? null : menu.value });
    });
  }

  /** Predicted step time (the placement on the cost model) and the measured one. */
  private showTiming(measured?: number): void {
    const t = (this.model.get('timing') as ITiming) || {};
    // A new placement has no measured step yet (the kernel says when it has one).
    this.measured = measured !== undefined ? measured : t.measured_us;
    const parts: string[] = [];
    if (t.predicted_us !== undefined) {
      parts.push(`predicted ${formatUs(t.predicted_us)}`);
    }
    if (this.measured !== undefined && (t.predicted_us !== undefined || t.moved?.length)) {
      parts.push(`measured ${formatUs(this.measured)}`);
    }
    if (t.moved && t.moved.length) {
      parts.push(`moved: ${t.moved.map(([op, d]) => `${op} → ${d.replace(/^.*\/device:/, '') || '(none)'}`).join(', ')}`);
    }
    this.timing.textContent = parts.join(' · ');
    this.timing.classList.toggle('fl-error', !!t.error);
    if (t.error) {
      this.timing.textContent = `${this.timing.textContent} · could not move: ${t.error}`;
    }
  }

  private deviceName(n: IGraphNode): string {
    const m = this.current();
    return m && n.dev >= 0 && m.devices[n.dev] ? m.devices[n.dev][0] : '(none or several)';
  }

  private showDetails(id: string, rows: [string, string, string][]): void {
    this.panel.textContent = '';
    this.panel.setAttribute('data-id', id);
    const n = this.nodes.get(id);
    htmlEl('div', 'fl-panel-title', this.panel, n ? n.name : id);
    let section = '';
    let table: HTMLTableElement | null = null;
    for (const [sec, key, value] of rows) {
      if (sec !== section || !table) {
        section = sec;
        htmlEl('div', 'fl-panel-section', this.panel, sec);
        table = htmlEl('table', 'fl-panel-table', this.panel);
      }
      const tr = htmlEl('tr', '', table);
      htmlEl('td', 'fl-key', tr, key);
      htmlEl('td', 'fl-value', tr, value);
    }
  }

  /** The selected node's last value summary, in its own panel row. */
  private showValue(text: string): void {
    let cell = this.panel.querySelector('.fl-last-value');
    if (!cell) {
      htmlEl('div', 'fl-panel-section', this.panel, 'last value');
      const tr = htmlEl('tr', '', htmlEl('table', 'fl-panel-table', this.panel));
      htmlEl('td', 'fl-key', tr, 'summary');
      cell = htmlEl('td', 'fl-value fl-last-value', tr);
    }
    cell.textContent = text;
  }

  // --- kernel messages and the live overlay ------------------------------------------
  private onMessage(msg: KernelMessage): void {
    if (msg.t === 'found') {
      if (msg.stage === this.stage && msg.q === this.searchBox.value.trim().toLowerCase()) {
        for (const id of msg.ids) {
          this.nodeEls.get(id)?.classList.add('fl-match');
        }
      }
    } else if (msg.t === 'layout') {
      // One stage laid out again (a scope opened or closed): folded into the model's
      // `layouts` here, not sent back; the notebook saves it with the rest.
      const all = (this.model.get('layouts') as { [stage: string]: IGraphLayout }) || {};
      this.model.set('layouts', { ...all, [msg.stage]: msg.layout });
    } else if (msg.t === 'live') {
      this.onLive(msg);
    }
  }

  private onLive(msg: Extract<KernelMessage, { t: 'live' }>): void {
    this.steps = msg.steps;
    for (const el of this.scene.querySelectorAll('.fl-running')) {
      el.classList.remove('fl-running');
    }
    const here = msg.stages[this.stage] ?? { run: [], done: [], xfer: {} };
    for (const id of here.run) {
      this.nodeEls.get(id)?.classList.add('fl-running');
    }
    for (const id of here.done) {
      const el = this.nodeEls.get(id);
      if (el) {
        el.classList.add('fl-done');
        el.animate([{ opacity: 1, filter: 'drop-shadow(0 0 6px #ff7f0e)' }, { opacity: 1, filter: 'none' }], {
          duration: FADE_MS,
          easing: 'ease-out'
        });
      }
    }
    for (const [key, nbytes] of Object.entries(here.xfer)) {
      const i = Number(key);
      const p = this.edgeEls[i];
      if (!p) {
        continue;
      }
      p.classList.add('fl-pulse');
      p.animate([{ strokeWidth: '7px' }, { strokeWidth: '2.5px' }], { duration: FADE_MS, easing: 'ease-out' });
      const label = this.edgeLabels.get(i);
      if (label) {
        label.textContent = formatBytes(nbytes);
        label.setAttribute('data-bytes', String(nbytes));
      }
    }
    if (msg.step_us !== undefined && msg.step_us !== null) {
      this.showTiming(msg.step_us);
    }
    if (msg.value && msg.value[0] === this.selectedName) {
      this.showValue(msg.value[1]);
    }
    this.status.textContent = msg.idle ? `idle, ${msg.steps} steps seen` : `running, ${msg.steps} steps seen`;
    this.root.classList.toggle('fl-busy', !msg.idle);
  }
}
