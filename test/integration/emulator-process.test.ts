// The emulator launcher's own bookkeeping: every port has its pid file, so that starting a second
// emulator (a bench's, a test's) does not make `emulator:stop` stop the wrong one or claim a stop
// that did not happen.
import { existsSync, rmSync } from 'node:fs';
import { createServer } from 'node:http';
import { afterAll, describe, expect, it } from 'vitest';
import { answers, emulatorLogFile, emulatorPidFile, ensureEmulator, speaksAws, stopEmulator } from '../../scripts/local/emulator';
import { freePort } from './support/own-emulator';

describe('emulator pid files', () => {
  const started: string[] = [];
  afterAll(async () => {
    for (const endpoint of started) {
      await stopEmulator(endpoint);
      rmSync(emulatorLogFile(endpoint), { force: true });
    }
  });

  it("stops the emulator of the port asked for, leaves another port's running, and says so truthfully", async () => {
    const first = `http://127.0.0.1:${await freePort()}`;
    const second = `http://127.0.0.1:${await freePort()}`;
    started.push(first, second);
    expect((await ensureEmulator(first)).origin).toBe('started');
    expect((await ensureEmulator(second)).origin).toBe('started');

    const stopped = await stopEmulator(first);
    expect(stopped).toMatchObject({ outcome: 'stopped', message: `emulator at ${first} stopped` });
    expect(await answers(first)).toBe(false);
    expect(await answers(second)).toBe(true);

    // Nothing of this project's runs at the first port any more: the answer must not claim a stop.
    expect((await stopEmulator(first)).outcome).toBe('no-pid-file');

    expect((await stopEmulator(second)).outcome).toBe('stopped');
    expect(await answers(second)).toBe(false);
  });

  it('does not claim to stop an emulator it did not start', async () => {
    // The suite's own emulator was started by global setup or was there already; either way a port
    // without a pid file of this project is not "stopped".
    const elsewhere = `http://127.0.0.1:${await freePort()}`;
    const result = await stopEmulator(elsewhere);
    expect(result.outcome).toBe('no-pid-file');
    expect(result.message).toBe(`no emulator started by this project runs at ${elsewhere}`);
  });

  it('refuses a web server that is not an AWS emulator, with what to do, and starts nothing', async () => {
    const port = await freePort();
    const endpoint = `http://127.0.0.1:${port}`;
    const server = createServer((_request, response) => response.writeHead(200, { 'content-type': 'text/html' }).end('<html>hello</html>'));
    await new Promise<void>((resolve) => server.listen(port, '127.0.0.1', resolve));
    try {
      expect(await answers(endpoint)).toBe(true);
      expect(await speaksAws(endpoint)).toBe(false);
      await expect(ensureEmulator(endpoint)).rejects.toThrow(`Something answers at ${endpoint}, but it is not an AWS emulator`);
      expect(existsSync(emulatorPidFile(endpoint))).toBe(false);
    } finally {
      await new Promise((resolve) => server.close(resolve));
    }
  });

  it("takes the suite's emulator, which speaks AWS, as one", async () => {
    const endpoint = process.env.AWS_ENDPOINT_URL ?? 'http://127.0.0.1:4566';
    expect(await speaksAws(endpoint)).toBe(true);
    expect((await ensureEmulator(endpoint)).origin).toBe('reused');
  });
});
