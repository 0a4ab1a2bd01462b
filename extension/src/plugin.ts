/**
 * The JupyterLab plugin: registers flowlab's widget module (models and views) with
 * the ipywidgets manager, under the name and version the Python widgets ask for.
 * Its styles (style/index.css) are loaded by JupyterLab through `styleModule`.
 */
import { JupyterFrontEnd, JupyterFrontEndPlugin } from '@jupyterlab/application';
import { IJupyterWidgetRegistry } from '@jupyter-widgets/base';

import { GraphView } from './graph';
import { GraphModel, MODULE_NAME, MODULE_VERSION, StepperModel, TimelineModel } from './model';
import { StepperView } from './stepper';
import { TimelineView } from './timeline';

/** The plugin registering `flowlab-widgets`. */
const plugin: JupyterFrontEndPlugin<void> = {
  id: 'flowlab-widgets:plugin',
  description: "flowlab's live graph views (ipywidgets)",
  requires: [IJupyterWidgetRegistry],
  autoStart: true,
  activate: (_app: JupyterFrontEnd, registry: IJupyterWidgetRegistry): void => {
    registry.registerWidget({
      name: MODULE_NAME,
      version: MODULE_VERSION,
      exports: { GraphModel, GraphView, StepperModel, StepperView, TimelineModel, TimelineView }
    });
  }
};

export default plugin;
