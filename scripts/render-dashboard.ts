// Draws docs/dashboard.svg, the layout of the CloudWatch dashboard, from its definition: synthesizes
// the stack in-process (no bundling), reads the dashboard body from the template and places each
// widget at its x, y, width and height on CloudWatch's 24-column grid. Graphs show their title, the
// series they plot and their annotation lines; no data is drawn.
//
// Usage: npm run docs:dashboard
import { App } from 'aws-cdk-lib';
import type { CfnAlarm } from 'aws-cdk-lib/aws-cloudwatch';
import { writeFileSync } from 'node:fs';
import * as path from 'node:path';
import { fileURLToPath } from 'node:url';
import { SchedulerStack } from '../lib/scheduler-stack';

const root = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '..');
const output = path.join(root, 'docs', 'dashboard.svg');

// ---- The dashboard body, as CloudWatch will read it ----

interface MetricOptions {
  label?: string;
  stat?: string;
  color?: string;
  visible?: boolean;
  expression?: string;
  id?: string;
}
type MetricRow = (string | MetricOptions)[];
interface Annotation {
  value: number;
  label?: string;
  color?: string;
}
interface Widget {
  /** 'text', 'metric' (a graph) or 'alarm' (alarm status). */
  type: string;
  x: number;
  y: number;
  width: number;
  height: number;
  properties: {
    markdown?: string;
    title?: string;
    metrics?: MetricRow[];
    alarms?: string[];
    annotations?: { horizontal?: Annotation[] };
    yAxis?: { left?: { label?: string; min?: number; max?: number } };
    period?: number;
  };
}
interface DashboardBody {
  start?: string;
  widgets: Widget[];
}

/** A CloudFormation token as a readable placeholder, safe inside a JSON string. */
function placeholder(token: unknown, names: Map<string, string>): string {
  const value = token as { Ref?: string; 'Fn::GetAtt'?: [string, string] };
  if (value.Ref) return names.get(value.Ref) ?? `<${value.Ref}>`;
  if (value['Fn::GetAtt']) {
    const [id, attribute] = value['Fn::GetAtt'];
    return names.get(id) ?? `<${id}.${attribute}>`;
  }
  return '<token>';
}

/** The DashboardBody property (a string or an Fn::Join of strings and tokens) as JSON. */
function parseBody(body: unknown, names: Map<string, string>): DashboardBody {
  if (typeof body === 'string') return JSON.parse(body) as DashboardBody;
  const [separator, parts] = (body as { 'Fn::Join': [string, unknown[]] })['Fn::Join'];
  const text = parts.map((part) => (typeof part === 'string' ? part : placeholder(part, names))).join(separator);
  return JSON.parse(text) as DashboardBody;
}

// ---- Drawing ----

const COLUMN = 52;
const UNIT = 36;
const MARGIN = 24;
const HEADER = 64;
const GAP = 4;
const FONT = 'font-family="\'Amazon Ember\', Helvetica, Arial, sans-serif"';
/** CloudWatch's default series colors, in order. */
const PALETTE = ['#1f77b4', '#ff7f0e', '#2ca02c', '#d62728', '#9467bd', '#8c564b', '#e377c2', '#7f7f7f', '#bcbd22', '#17becf'];

const escape = (text: string) => text.replace(/&/g, '&amp;').replace(/</g, '&lt;').replace(/>/g, '&gt;').replace(/"/g, '&quot;');

/** Approximate width of text in a sans-serif font. */
const textWidth = (text: string, size: number) => text.length * size * 0.55;

function truncate(text: string, maxWidth: number, size: number): string {
  if (textWidth(text, size) <= maxWidth) return text;
  const chars = Math.max(1, Math.floor(maxWidth / (size * 0.55)) - 1);
  return `${text.slice(0, chars)}…`;
}

function wrap(text: string, maxWidth: number, size: number): string[] {
  const lines: string[] = [];
  let line = '';
  for (const word of text.split(/\s+/).filter(Boolean)) {
    const next = line ? `${line} ${word}` : word;
    if (textWidth(next, size) > maxWidth && line) {
      lines.push(line);
      line = word;
    } else line = next;
  }
  if (line) lines.push(line);
  return lines;
}

function textElement(x: number, y: number, text: string, size: number, attributes = ''): string {
  return `<text x="${x.toFixed(1)}" y="${y.toFixed(1)}" font-size="${size}" ${attributes}>${escape(text)}</text>`;
}

interface Series {
  label: string;
  color: string;
}

/** The visible series of a graph, and how many hidden inputs its expressions read. */
function seriesOf(rows: MetricRow[]): { series: Series[]; hidden: number } {
  const series: Series[] = [];
  let hidden = 0;
  for (const row of rows) {
    const last = row[row.length - 1];
    const options: MetricOptions = typeof last === 'object' ? last : {};
    if (options.visible === false) {
      hidden++;
      continue;
    }
    let label: string;
    if (options.expression) {
      const search = /^SEARCH\('\{([^}]*)\}.*MetricName="([^"]+)".*',\s*'([^']+)'/.exec(options.expression);
      if (search) {
        const dimensions = search[1]!.split(',').slice(1);
        label = `${search[2]} ${search[3]}, one line per ${dimensions[dimensions.length - 1]} (SEARCH)`;
      } else label = `${options.label ?? options.id ?? 'expression'} = ${options.expression}`;
    } else {
      const name = row[1] as string;
      label = options.label ?? `${name}${options.stat ? ` ${options.stat}` : ''}`;
      if (options.stat && !label.includes(options.stat) && !/max|p\d\d/.test(label)) label += ` (${options.stat})`;
    }
    series.push({ label, color: options.color ?? PALETTE[series.length % PALETTE.length]! });
  }
  return { series, hidden };
}

function markdownLines(markdown: string): { text: string; size: number; bold: boolean }[] {
  const lines: { text: string; size: number; bold: boolean }[] = [];
  for (const raw of markdown.split('\n')) {
    const heading = /^(#+)\s+(.*)$/.exec(raw);
    if (heading) lines.push({ text: heading[2]!, size: heading[1]!.length === 1 ? 18 : 15, bold: true });
    else if (raw.trim()) lines.push({ text: raw.replace(/\*\*|`/g, ''), size: 12, bold: false });
  }
  return lines;
}

function drawWidget(widget: Widget): string {
  const x = MARGIN + widget.x * COLUMN + GAP / 2;
  const y = HEADER + MARGIN + widget.y * UNIT + GAP / 2;
  const width = widget.width * COLUMN - GAP;
  const height = widget.height * UNIT - GAP;
  const inner = width - 20;
  const parts: string[] = [];
  const { properties } = widget;

  if (widget.type === 'text') {
    parts.push(`<rect x="${x}" y="${y}" width="${width}" height="${height}" rx="3" fill="#f4f6f8" stroke="#d5dbdb" stroke-dasharray="4 3"/>`);
    let cursor = y + 8;
    for (const line of markdownLines(properties.markdown ?? '')) {
      for (const wrapped of wrap(line.text, inner, line.size)) {
        cursor += line.size + 4;
        if (cursor > y + height - 4) break;
        parts.push(textElement(x + 10, cursor, wrapped, line.size, line.bold ? 'font-weight="bold" fill="#16191f"' : 'fill="#414750"'));
      }
    }
    return parts.join('\n');
  }

  parts.push(`<rect x="${x}" y="${y}" width="${width}" height="${height}" rx="3" fill="#ffffff" stroke="#aab7b8"/>`);
  parts.push(textElement(x + 10, y + 20, truncate(properties.title ?? '', inner, 13), 13, 'font-weight="bold" fill="#16191f"'));

  if (widget.type === 'alarm') {
    let cursor = y + 42;
    for (const alarm of properties.alarms ?? []) {
      if (cursor > y + height - 6) break;
      parts.push(`<circle cx="${x + 16}" cy="${cursor - 4}" r="4.5" fill="#d5dbdb" stroke="#879596"/>`);
      parts.push(textElement(x + 28, cursor, truncate(alarm, inner - 20, 12), 12, 'fill="#16191f"'));
      cursor += 17;
    }
    parts.push(textElement(x + width - 10, y + 20, 'state: live', 11, 'text-anchor="end" fill="#879596"'));
    return parts.join('\n');
  }

  // A graph: the plot area on top, the legend under it (as CloudWatch lays them out).
  const { series, hidden } = seriesOf(properties.metrics ?? []);
  const legendLines = series.length + (hidden > 0 ? 1 : 0);
  const legendHeight = legendLines * 14 + 6;
  const plotTop = y + 30;
  const plotLeft = x + 40;
  const plotRight = x + width - 12;
  const plotBottom = Math.max(plotTop + 30, y + height - legendHeight - 8);
  const axis = properties.yAxis?.left;
  parts.push(`<rect x="${plotLeft}" y="${plotTop}" width="${plotRight - plotLeft}" height="${plotBottom - plotTop}" fill="#fafbfc" stroke="#eaeded"/>`);
  for (let i = 1; i < 4; i++) {
    const gy = plotTop + ((plotBottom - plotTop) * i) / 4;
    parts.push(`<line x1="${plotLeft}" y1="${gy.toFixed(1)}" x2="${plotRight}" y2="${gy.toFixed(1)}" stroke="#eaeded"/>`);
  }
  if (axis?.label) {
    const cy = (plotTop + plotBottom) / 2;
    parts.push(textElement(x + 16, cy, axis.label, 10, `fill="#687078" text-anchor="middle" transform="rotate(-90 ${x + 16} ${cy.toFixed(1)})"`));
  }
  if (axis?.max !== undefined) parts.push(textElement(plotLeft - 4, plotTop + 9, String(axis.max), 9, 'fill="#687078" text-anchor="end"'));
  if (axis?.min !== undefined) parts.push(textElement(plotLeft - 4, plotBottom, String(axis.min), 9, 'fill="#687078" text-anchor="end"'));
  const annotations = properties.annotations?.horizontal ?? [];
  annotations.forEach((annotation, i) => {
    // Placed at its value when the axis has a max, else in the upper part of the plot.
    const fraction = axis?.max !== undefined ? 1 - (annotation.value - (axis.min ?? 0)) / (axis.max - (axis.min ?? 0)) : 0.3 + 0.15 * i;
    const ay = plotTop + (plotBottom - plotTop) * Math.min(Math.max(fraction, 0.08), 0.92);
    const color = annotation.color ?? '#d62728';
    parts.push(
      `<line x1="${plotLeft}" y1="${ay.toFixed(1)}" x2="${plotRight}" y2="${ay.toFixed(1)}" stroke="${color}" stroke-width="1.5" stroke-dasharray="6 4"/>`,
    );
    const label = annotation.label?.includes(String(annotation.value)) ? annotation.label : `${annotation.label ?? ''} (${annotation.value})`.trim();
    parts.push(textElement(plotRight - 4, ay - 4, truncate(label, plotRight - plotLeft - 8, 10), 10, `text-anchor="end" fill="${color}"`));
  });
  let cursor = plotBottom + 16;
  for (const s of series) {
    parts.push(`<rect x="${x + 12}" y="${cursor - 8}" width="10" height="3" fill="${s.color}"/>`);
    parts.push(textElement(x + 28, cursor, truncate(s.label, inner - 18, 11), 11, 'fill="#414750"'));
    cursor += 14;
  }
  if (hidden > 0) parts.push(textElement(x + 28, cursor, `(+${hidden} hidden inputs of the expressions)`, 10, 'fill="#879596" font-style="italic"'));
  return parts.join('\n');
}

function render(body: DashboardBody, dashboardName: string): string {
  const rows = Math.max(...body.widgets.map((w) => w.y + w.height));
  const width = MARGIN * 2 + 24 * COLUMN;
  const height = HEADER + MARGIN * 2 + rows * UNIT;
  const grid: string[] = [];
  for (let column = 0; column <= 24; column++) {
    const gx = MARGIN + column * COLUMN;
    grid.push(`<line x1="${gx}" y1="${HEADER + MARGIN}" x2="${gx}" y2="${height - MARGIN}" stroke="#f2f3f3"/>`);
  }
  const periods = new Set(body.widgets.map((w) => w.properties.period).filter((p) => p !== undefined));
  const subtitle =
    `CloudWatch dashboard "${dashboardName}": ${body.widgets.length} widgets on the 24-column grid` +
    `${periods.size === 1 ? `, period ${[...periods][0]} s` : ''}${body.start ? `, time range ${body.start}` : ''}. ` +
    'Layout only, no data. Generated from lib/dashboard.ts by npm run docs:dashboard.';
  return [
    `<svg xmlns="http://www.w3.org/2000/svg" width="${width}" height="${height}" viewBox="0 0 ${width} ${height}" ${FONT}>`,
    `<rect width="${width}" height="${height}" fill="#ffffff"/>`,
    textElement(MARGIN, 34, `Dashboard: ${dashboardName}`, 20, 'font-weight="bold" fill="#16191f"'),
    textElement(MARGIN, 54, subtitle, 12, 'fill="#687078"'),
    ...grid,
    ...body.widgets.map(drawWidget),
    '</svg>',
    '',
  ].join('\n');
}

// ---- Main ----

// The same app as bin/scheduler.ts, with bundling skipped: only the template is read.
const app = new App({ context: { 'aws:cdk:bundling-stacks': [] } });
const stack = new SchedulerStack(app, 'JobScheduler');
const template = app.synth().getStackByName(stack.stackName).template as {
  Resources: Record<string, { Type: string; Properties: Record<string, unknown> }>;
};
// Alarm ARNs in the alarm widget are tokens; show the alarms' names instead.
const names = new Map<string, string>(
  Object.values(stack.observability.alarms).map((alarm) => [stack.getLogicalId(alarm.node.defaultChild as CfnAlarm), alarm.node.id]),
);
const dashboards = Object.values(template.Resources).filter((r) => r.Type === 'AWS::CloudWatch::Dashboard');
if (dashboards.length !== 1) throw new Error(`expected one dashboard, found ${dashboards.length}`);
const properties = dashboards[0]!.Properties;
const body = parseBody(properties.DashboardBody, names);
const dashboardName = typeof properties.DashboardName === 'string' ? properties.DashboardName : '<dashboard>';
writeFileSync(output, render(body, dashboardName));
console.log(`wrote ${path.relative(root, output)}: ${body.widgets.length} widgets`);
