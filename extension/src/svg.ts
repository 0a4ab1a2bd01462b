/**
 * Small DOM helpers shared by the views: SVG and HTML elements built with
 * `createElementNS` / `createElement`, text set with `textContent` only.
 *
 * No helper here accepts markup: there is no way to turn a node name into HTML.
 */

/** The SVG namespace. */
export const SVG_NS = 'http://www.w3.org/2000/svg';

/** An SVG element with attributes (numbers and strings; never text content). */
export function svgEl<K extends keyof SVGElementTagNameMap>(
  tag: K,
  attrs: { [name: string]: string | number } = {},
  parent?: Element
): SVGElementTagNameMap[K] {
  const el = document.createElementNS(SVG_NS, tag);
  for (const [k, v] of Object.entries(attrs)) {
    el.setAttribute(k, String(v));
  }
  if (parent) {
    parent.appendChild(el);
  }
  return el;
}

/** An SVG <text> of one or more lines, centred on (x, y); the lines are text. */
export function svgText(
  lines: string[],
  x: number,
  y: number,
  parent: Element,
  cls: string,
  lineHeight = 12
): SVGTextElement {
  const t = svgEl('text', { x, y, class: cls, 'text-anchor': 'middle' }, parent);
  const top = y - ((lines.length - 1) * lineHeight) / 2;
  lines.forEach((line, i) => {
    const span = svgEl('tspan', { x, y: top + i * lineHeight, 'dominant-baseline': 'middle' }, t);
    span.textContent = line;
  });
  return t;
}

/** An HTML element with a class and optional text (as text). */
export function htmlEl<K extends keyof HTMLElementTagNameMap>(
  tag: K,
  cls: string,
  parent?: Element,
  text?: string
): HTMLElementTagNameMap[K] {
  const el = document.createElement(tag);
  if (cls) {
    el.className = cls;
  }
  if (text !== undefined) {
    el.textContent = text;
  }
  if (parent) {
    parent.appendChild(el);
  }
  return el;
}

/** An SVG path `d` of graphviz's cubic B-spline points (flat x, y pairs). */
export function splinePath(pts: number[], tip?: number[]): string {
  if (pts.length < 2) {
    return '';
  }
  let d = `M${pts[0]},${pts[1]}`;
  for (let i = 2; i + 5 < pts.length; i += 6) {
    d += ` C${pts[i]},${pts[i + 1]} ${pts[i + 2]},${pts[i + 3]} ${pts[i + 4]},${pts[i + 5]}`;
  }
  if (tip) {
    d += ` L${tip[0]},${tip[1]}`;
  }
  return d;
}

/** `1536` -> `1.5 KiB`, as the static pictures write it. */
export function formatBytes(n: number): string {
  const units = ['B', 'KiB', 'MiB', 'GiB'];
  let v = n;
  for (const unit of units) {
    if (Math.abs(v) < 1024 || unit === 'GiB') {
      return unit === 'B' ? `${Math.round(v)} B` : `${v.toFixed(1)} ${unit}`;
    }
    v /= 1024;
  }
  return `${v.toFixed(1)} GiB`;
}

/** `1234.5` (µs) -> `1.23 ms`. */
export function formatUs(us: number): string {
  const a = Math.abs(us);
  if (a >= 1e6) {
    return `${(us / 1e6).toFixed(a >= 1e7 ? 1 : 2)} s`;
  }
  if (a >= 1e3) {
    return `${(us / 1e3).toFixed(a >= 1e4 ? 1 : 2)} ms`;
  }
  return `${us.toFixed(a >= 10 || us === 0 ? 0 : 1)} µs`;
}
