/**
 * StepperView (the panel of flowlab/viz/stepper.py): the Stepper's buttons -- step,
 * step n, continue, run to the selected node, abort, a breakpoint on the selected node,
 * stop on NaN/Inf -- the ready queue of every device, the Recvs waiting for their
 * Send, the breakpoints, where the step stopped and why, and the tensor inspector
 * (shape, dtype, min/max/mean, NaN/Inf counts, a slice of the values, a histogram).
 *
 * The graph beside it is a GraphView of the step's ops (the GraphModel in `graph`): a
 * click there selects the node here (the `fl:selected` event, no kernel round trip),
 * which the inspector then shows -- or, with "click sets breakpoints" on, toggles its
 * breakpoint.  Clicking an op in a ready queue selects it in the graph.
 * State: the selected op name.  Every string goes in `textContent`.  Without a live
 * kernel the panel shows the last state, says "kernel gone", and its buttons are off.
 */
import { DOMWidgetModel, DOMWidgetView } from '@jupyter-widgets/base';

import { FOCUS, IStepperState, SELECTED } from './model';
import { htmlEl, svgEl } from './svg';

/** The widget's view. */
export class StepperView extends DOMWidgetView {
  private root!: HTMLDivElement;
  private buttons: HTMLButtonElement[] = [];
  private count!: HTMLInputElement;
  private nanBox!: HTMLInputElement;
  private breakMode!: HTMLInputElement;
  private selectedLabel!: HTMLSpanElement;
  private stopLine!: HTMLDivElement;
  private queues!: HTMLDivElement;
  private inspector!: HTMLDivElement;
  private selected = '';
  private graph: DOMWidgetModel | null = null;

  /** Build the DOM once; `show` fills it from the `state` trait. */
  render(): void {
    this.el.classList.add('fl-stepper-view');
    this.root = htmlEl('div', 'fl-root fl-stepper', this.el);
    const bar = htmlEl('div', 'fl-toolbar', this.root);
    this.button(bar, 'step', 'fl-step', () => ({ t: 'step', n: 1 }));
    this.button(bar, 'step n', 'fl-step-n', () => ({ t: 'step', n: Math.max(1, Number(this.count.value) || 1) }));
    this.count = htmlEl('input', 'fl-count', bar);
    this.count.type = 'number';
    this.count.min = '1';
    this.count.value = '10';
    this.count.title = 'n, for "step n"';
    this.button(bar, 'continue', 'fl-continue', () => ({ t: 'continue' }));
    this.button(bar, 'run to selected', 'fl-run-to', () => (this.selected ? { t: 'run_to', name: this.selected } : null));
    this.button(bar, 'breakpoint', 'fl-break', () => (this.selected ? { t: 'break', name: this.selected } : null));
    this.button(bar, 'abort', 'fl-abort', () => ({ t: 'abort' }));
    const nan = htmlEl('label', 'fl-check', bar);
    this.nanBox = htmlEl('input', 'fl-nan', nan);
    this.nanBox.type = 'checkbox';
    nan.appendChild(document.createTextNode(' stop on NaN/Inf'));
    this.nanBox.addEventListener('change', () => this.command({ t: 'nan', on: this.nanBox.checked }));
    const bm = htmlEl('label', 'fl-check', bar);
    this.breakMode = htmlEl('input', 'fl-break-mode', bm);
    this.breakMode.type = 'checkbox';
    bm.appendChild(document.createTextNode(' click sets breakpoints'));
    this.selectedLabel = htmlEl('span', 'fl-status fl-selected-op', bar, 'click a node to select it');

    this.stopLine = htmlEl('div', 'fl-stop', this.root);
    const body = htmlEl('div', 'fl-stepper-body', this.root);
    this.queues = htmlEl('div', 'fl-queues', body);
    this.inspector = htmlEl('div', 'fl-inspector', body);

    this.listenTo(this.model, 'change:state', () => this.show());
    this.listenTo(this.model, 'change:graph', () => this.linkGraph());
    this.listenTo(this.model, 'comm_live_update', () => this.show());
    this.linkGraph();
    this.show();
  }

  private button(parent: HTMLElement, text: string, cls: string, msg: () => object | null): void {
    const b = htmlEl('button', `fl-button ${cls}`, parent, text);
    b.addEventListener('click', () => {
      const m = msg();
      if (m) {
        this.command(m);
      }
    });
    this.buttons.push(b);
  }

  private command(msg: object): void {
    if (this.model.comm_live) {
      this.root.classList.add('fl-busy');
      this.send(msg);
    }
  }

  private linkGraph(): void {
    if (this.graph) {
      this.stopListening(this.graph, SELECTED);
    }
    this.graph = (this.model.get('graph') as DOMWidgetModel | null) || null;
    if (this.graph) {
      this.listenTo(this.graph, SELECTED, (name: string) => this.onSelected(name));
    }
  }

  private onSelected(name: string): void {
    if (this.breakMode.checked) {
      this.command({ t: 'break', name });
      return;
    }
    this.selected = name;
    this.selectedLabel.textContent = `selected: ${name}`;
    this.command({ t: 'inspect', name });
  }

  private get state(): IStepperState | undefined {
    const s = this.model.get('state') as IStepperState;
    return s && s.status ? s : undefined;
  }

  /** Fill the panel from the `state` trait. */
  private show(): void {
    this.root.classList.remove('fl-busy');
    const s = this.state;
    const live = this.model.comm_live;
    this.root.classList.toggle('fl-offline', !live);
    const running = !!s && s.status === 'running';
    for (const b of this.buttons) {
      b.disabled = !live || !running;
    }
    this.nanBox.disabled = !live;
    if (!s) {
      this.stopLine.textContent = 'no step';
      return;
    }
    this.nanBox.checked = s.nan;
    this.stopLine.textContent = '';
    this.root.setAttribute('data-status', s.status);
    this.root.setAttribute('data-ran', String(s.ran));
    htmlEl('span', 'fl-progress', this.stopLine, `${s.ran} of ${s.total} ops ran · ${s.status} · `);
    htmlEl('span', `fl-stop-message fl-stop-${s.stop_kind}`, this.stopLine, s.stop);
    if (s.error) {
      htmlEl('div', 'fl-error', this.stopLine, s.error);
    }
    if (!live) {
      htmlEl('div', 'fl-error', this.stopLine, 'kernel gone: the last state of the step (run the cell again to step)');
    }
    this.showQueues(s);
    this.showInspector(s);
  }

  private showQueues(s: IStepperState): void {
    this.queues.textContent = '';
    for (const [short, full, names] of s.ready) {
      const sec = htmlEl('div', 'fl-panel-section', this.queues, `ready on ${short} (${names.length})`);
      sec.title = full;
      const list = htmlEl('ol', 'fl-queue', this.queues);
      list.setAttribute('data-device', short);
      for (const name of names) {
        const li = htmlEl('li', 'fl-queue-op', list, name);
        li.addEventListener('click', () => {
          this.graph?.trigger(FOCUS, name);
          this.onSelected(name);
        });
      }
      if (!names.length) {
        htmlEl('li', 'fl-queue-empty', list, '(none)');
      }
    }
    if (s.waiting.length) {
      htmlEl('div', 'fl-panel-section', this.queues, `waiting (${s.waiting.length})`);
      const list = htmlEl('ul', 'fl-queue', this.queues);
      for (const [recv, send] of s.waiting) {
        htmlEl('li', '', list, `${recv} waits for ${send}`);
      }
    }
    htmlEl('div', 'fl-panel-section', this.queues, `breakpoints (${s.breakpoints.length})`);
    const bps = htmlEl('ul', 'fl-breakpoints', this.queues);
    for (const b of s.breakpoints) {
      htmlEl('li', '', bps, b);
    }
    if (s.last.length) {
      htmlEl('div', 'fl-panel-section', this.queues, 'last ran');
      htmlEl('div', 'fl-value', this.queues, s.last.join(', '));
    }
  }

  private showInspector(s: IStepperState): void {
    this.inspector.textContent = '';
    const v = s.inspect;
    htmlEl('div', 'fl-panel-section', this.inspector, 'tensor inspector');
    if (!v) {
      htmlEl('div', 'fl-panel-hint', this.inspector, 'Select a node that ran to see its output.');
      return;
    }
    htmlEl('div', 'fl-panel-title fl-inspected', this.inspector, v.tensor);
    if (v.note) {
      htmlEl('div', 'fl-panel-hint', this.inspector, v.note);
      return;
    }
    const table = htmlEl('table', 'fl-panel-table', this.inspector);
    const rows: [string, string | number | undefined][] = [
      ['shape', v.shape], ['dtype', v.dtype], ['min', v.min], ['max', v.max], ['mean', v.mean],
      ['NaN', v.nan], ['Inf', v.inf]
    ];
    for (const [k, val] of rows) {
      if (val === undefined) {
        continue;
      }
      const tr = htmlEl('tr', '', table);
      htmlEl('td', 'fl-key', tr, k);
      const td = htmlEl('td', `fl-value fl-inspect-${k.toLowerCase()}`, tr, String(val));
      if ((k === 'NaN' || k === 'Inf') && Number(val) > 0) {
        td.classList.add('fl-bad');
      }
    }
    htmlEl('div', 'fl-key', this.inspector, v.slice ? `values ${v.slice}` : 'values');
    htmlEl('pre', 'fl-values', this.inspector, v.values ?? '');
    if (v.hist && v.edges) {
      this.histogram(v.hist, v.edges);
    }
  }

  private histogram(counts: number[], edges: [number, number]): void {
    const W = 240;
    const H = 60;
    const svg = svgEl('svg', { class: 'fl-hist', width: W, height: H + 14 }, this.inspector);
    const top = Math.max(1, ...counts);
    const w = W / counts.length;
    counts.forEach((c, i) => {
      const h = (c / top) * H;
      const r = svgEl('rect', { x: i * w + 0.5, y: H - h, width: Math.max(w - 1, 1), height: h, class: 'fl-hist-bar' }, svg);
      svgEl('title', {}, r).textContent = `${c}`;
    });
    svgEl('text', { x: 0, y: H + 12, class: 'fl-tick-label' }, svg).textContent = edges[0].toPrecision(3);
    svgEl('text', { x: W, y: H + 12, class: 'fl-tick-label', 'text-anchor': 'end' }, svg).textContent = edges[1].toPrecision(3);
  }
}
