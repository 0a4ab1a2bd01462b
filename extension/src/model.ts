/**
 * The laid-out stages the kernel sends (flowlab/viz/layout.py), and the widget model.
 *
 * Every string in it is plain text: the views put it in `textContent`, never in markup.
 * Coordinates are points with y growing downwards, as the kernel computed them with
 * graphviz, so the static SVG and this view place every box in the same spot.
 */
import { DOMWidgetModel } from '@jupyter-widgets/base';

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
  /** The side panel: [section, key, value] rows, computed by the kernel. */
  info?: [string, string, string][];
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
  | {
      t: 'live';
      stages: { [stage: string]: ILiveStage };
      steps: number;
      idle: boolean;
      value?: [string, string];
    };

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
      view_height: 520
    };
  }
}
