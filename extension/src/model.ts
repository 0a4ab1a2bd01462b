/**
 * The laid-out stages the kernel sends (flowlab/viz/layout.py), and the widget model.
 *
 * Every string in it is plain text: the views put it in `textContent`, never in markup.
 * Coordinates are points with y growing downwards, as the kernel computed them with
 * graphviz, so the static SVG and this view place every box in the same spot.
 */
import { DOMWidgetModel, ISerializers, unpack_models } from '@jupyter-widgets/base';

/** The npm package name, also the ipywidgets module name. */
export const MODULE_NAME = 'flowlab-widgets';
/** The module version the Python side asks for (`^0.1.0`). */
export const MODULE_VERSION = '0.1.0';

/** One drawn node: an op, a Send/Recv, or a collapsed name scope. */
export interface IGraphNode {
  id: string;
  x: number;
  y: number;
  w: number;
  h: number;
  label: string[];
  name: string;
  op: string;
  kind: 'op' | 'scope' | 'send' | 'recv';
  /** Index into `devices`, -1 when none or several. */
  dev: number;
  shape: string;
  state?: string;
  /** The side panel: [section, key, value] rows, computed by the kernel, as indices
   * into the layout's `strings`. */
  info?: [number, number, number][];
}

/** A box: a partition, a loop frame, or an open name scope. */
export interface IGraphCluster {
  x: number;
  y: number;
  w: number;
  h: number;
  label: string;
  kind: 'partition' | 'frame' | 'scope';
  name: string;
  fill: string;
}

/** An edge: d data, c control, x cross-device, t Send -> Recv. */
export interface IGraphEdge {
  src: string;
  dst: string;
  kind: 'd' | 'c' | 'x' | 't';
  /** Cubic B-spline control points, flat: x0, y0, x1, y1, ... */
  pts: number[];
  tip?: number[];
  label?: string[];
  lp?: number[];
  key?: string;
}

/**
 * An input from a high fan-out op (a weight, a placeholder) drawn as a stub at its
 * consumer instead of an edge across the whole graph (as TensorBoard does).
 */
export interface IGraphAux {
  src: string;
  dst: string;
  kind: 'd' | 'c' | 'x';
}

/** The whole laid-out stage. */
export interface IGraphLayout {
  v: number;
  title: string;
  size: [number, number];
  /** [full name, short name, fill color] per device. */
  devices: [string, string, string][];
  nodes: IGraphNode[];
  clusters: IGraphCluster[];
  edges: IGraphEdge[];
  aux?: IGraphAux[];
  /** The strings the nodes' `info` rows index. */
  strings?: string[];
}

/** What one live update says about one stage: node ids and edge indices. */
export interface ILiveStage {
  run: string[];
  done: string[];
  xfer: { [edge: string]: number };
}

/** A kernel -> browser message. */
export type KernelMessage =
  | { t: 'found'; q: string; stage: string; ids: string[] }
  | { t: 'layout'; stage: string; layout: IGraphLayout }
  | {
      t: 'live';
      stages: { [stage: string]: ILiveStage };
      steps: number;
      idle: boolean;
      value?: [string, string];
      /** The watched step's time so far, first event to latest (µs). */
      step_us?: number | null;
    };

/** GraphView's `timing` trait: placement you can try. */
export interface ITiming {
  predicted_us?: number;
  measured_us?: number;
  /** [op, the device it asks for now] of each op moved. */
  moved?: [string, string][];
  error?: string;
}

/** The widget's model: the Python GraphView's synced traits. */
export class GraphModel extends DOMWidgetModel {
  defaults(): ReturnType<DOMWidgetModel['defaults']> {
    return {
      ...super.defaults(),
      _model_name: 'GraphModel',
      _model_module: MODULE_NAME,
      _model_module_version: MODULE_VERSION,
      _view_name: 'GraphView',
      _view_module: MODULE_NAME,
      _view_module_version: MODULE_VERSION,
      layouts: {},
      stage_names: [],
      stage: '',
      missing: {},
      marks: {},
      device_names: [],
      timing: {},
      view_height: 520
    };
  }
}

/**
 * Events the views of linked widgets exchange on a GraphModel, in the browser (no
 * kernel round trip): a TimelineView or a StepperView triggers `fl:hover` (an op name,
 * or '' when the pointer leaves) and `fl:focus` (select that op's node); every
 * GraphView of the model triggers `fl:selected` (the name of the node clicked).
 */
export const HOVER = 'fl:hover';
export const FOCUS = 'fl:focus';
export const SELECTED = 'fl:selected';

/** The timeline the kernel sends (flowlab/viz/timeline.py). */
export interface ITimeline {
  v: number;
  /** [full name, short name, color] per device. */
  devices: [string, string, string][];
  /** [device index, thread tag ('' when the device has one thread), thread name]. */
  lanes: [number, string, string][];
  /** [step id, start (µs), duration (µs), its number in the trace (from 1)] per step shown. */
  steps: [number, number, number, number][];
  names: string[];
  types: string[];
  colors: string[];
  /** [lane, step, start (µs from its step's start), duration, name, type, flags, outputs]. */
  ops: [number, number, number, number, number, number, number, string][];
  /** [send row, recv row, bytes, tensor]. */
  flows: [number, number, number, string][];
  all_steps: number;
}

/** Flags of a timeline row. */
export const WAIT = 1;
export const DEAD = 2;
export const ERROR = 4;

/** The TimelineView's model; `graph` is the linked GraphModel (or null). */
export class TimelineModel extends DOMWidgetModel {
  static serializers: ISerializers = {
    ...DOMWidgetModel.serializers,
    graph: { deserialize: unpack_models }
  };

  defaults(): ReturnType<DOMWidgetModel['defaults']> {
    return {
      ...super.defaults(),
      _model_name: 'TimelineModel',
      _model_module: MODULE_NAME,
      _model_module_version: MODULE_VERSION,
      _view_name: 'TimelineView',
      _view_module: MODULE_NAME,
      _view_module_version: MODULE_VERSION,
      timeline: {},
      graph: null,
      view_height: 260
    };
  }
}

/** The inspected tensor (flowlab/viz/stepper.py `inspect_value`). */
export interface IInspected {
  tensor: string;
  note?: string;
  shape?: string;
  dtype?: string;
  min?: string;
  max?: string;
  mean?: string;
  nan?: number;
  inf?: number;
  values?: string;
  slice?: string;
  hist?: number[];
  edges?: [number, number];
}

/** The Stepper as it is after the last command (flowlab/viz/stepper.py `refresh`). */
export interface IStepperState {
  status: 'running' | 'finished' | 'failed' | 'aborted';
  stop: string;
  stop_kind: string;
  stop_op: string;
  ran: number;
  total: number;
  last: string[];
  nan: boolean;
  /** [short device, full device, ready op names (the next first)] per device. */
  ready: [string, string, string[]][];
  /** [Recv, the Send it waits for]. */
  waiting: [string, string][];
  breakpoints: string[];
  error: string;
  commands: number;
  inspect: IInspected | null;
}

/** The StepperView panel's model; `graph` is the step's GraphModel. */
export class StepperModel extends DOMWidgetModel {
  static serializers: ISerializers = {
    ...DOMWidgetModel.serializers,
    graph: { deserialize: unpack_models }
  };

  defaults(): ReturnType<DOMWidgetModel['defaults']> {
    return {
      ...super.defaults(),
      _model_name: 'StepperModel',
      _model_module: MODULE_NAME,
      _model_module_version: MODULE_VERSION,
      _view_name: 'StepperView',
      _view_module: MODULE_NAME,
      _view_module_version: MODULE_VERSION,
      state: {},
      graph: null
    };
  }
}
