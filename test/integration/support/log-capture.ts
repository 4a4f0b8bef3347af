// Captures what the scheduler's process writes while a test runs: the structured logger's JSON
// lines (at DEBUG, so nothing is left out), anything else on stdout and stderr, and the console.
// Tests read the lines to check what was logged, or that something never was.
import { vi } from 'vitest';
import { logger } from '../../../lambdas/core/logger';
import { recordLogLines } from './leak-record';

export interface LogCapture {
  /** Every line written, as text. */
  readonly lines: string[];
  /** The lines that are the structured logger's JSON, parsed. */
  readonly records: () => Record<string, unknown>[];
  stop(): void;
}

export function captureLogs(level: 'DEBUG' | 'INFO' = 'DEBUG'): LogCapture {
  const lines: string[] = [];
  const before = logger.getLevelName();
  logger.setLogLevel(level);
  const keep = (chunk: unknown): void => {
    const text = typeof chunk === 'string' ? chunk : chunk instanceof Uint8Array ? Buffer.from(chunk).toString('utf8') : String(chunk);
    for (const line of text.split('\n')) if (line.trim() !== '') lines.push(line);
    // These spies take the streams over from the suite's recorder: the lines go to the leak check too.
    recordLogLines(text);
  };
  // Kept off the test output: they are many at DEBUG.
  const streams = [process.stdout, process.stderr].map((stream) =>
    vi.spyOn(stream, 'write').mockImplementation((chunk: string | Uint8Array) => (keep(chunk), true)),
  );
  const spies = (['log', 'info', 'warn', 'error', 'debug'] as const).map((name) =>
    vi
      .spyOn(console, name)
      .mockImplementation((...args: unknown[]) => keep(args.map((arg) => (typeof arg === 'string' ? arg : JSON.stringify(arg))).join(' '))),
  );
  return {
    lines,
    records: () =>
      lines.flatMap((line) => {
        if (!line.startsWith('{')) return [];
        try {
          const parsed = JSON.parse(line) as Record<string, unknown>;
          return parsed.service === 'job-scheduler' ? [parsed] : [];
        } catch {
          return [];
        }
      }),
    stop() {
      for (const stream of streams) stream.mockRestore();
      for (const spy of spies) spy.mockRestore();
      logger.setLogLevel(before);
    },
  };
}
