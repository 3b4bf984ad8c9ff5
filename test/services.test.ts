// A server's services (src/server/services.ts): started in the list's order,
// stopped in the reverse order, a failed start undoing what had started, and a
// group that winds down side by side.
import { describe, expect, test } from 'vitest';
import { type Service, service, startServices, together } from '../src/server/services.ts';

function recorded(said: string[], name: string, options: { failStart?: boolean; failStop?: boolean; stopMs?: number } = {}): Service {
  return service(
    name,
    () => {
      if (options.failStart) throw new Error(`${name} cannot start`);
      said.push(`start ${name}`);
    },
    async () => {
      said.push(`stop ${name}`);
      if (options.stopMs) await new Promise((resolve) => setTimeout(resolve, options.stopMs));
      said.push(`stopped ${name}`);
      if (options.failStop) throw new Error(`${name} cannot stop`);
    },
  );
}

describe('startServices', () => {
  test('starts in order and stops in the reverse order, once however often asked', async () => {
    const said: string[] = [];
    const started = await startServices(['database', 'pool', 'api'].map((name) => recorded(said, name)));
    await Promise.all([started.stop(), started.stop()]);
    await started.stop();
    expect(said.filter((line) => !line.startsWith('stopped'))).toEqual([
      'start database',
      'start pool',
      'start api',
      'stop api',
      'stop pool',
      'stop database',
    ]);
  });

  test('a start that fails stops what had started, in reverse, and the failure is thrown', async () => {
    const said: string[] = [];
    const services = [
      recorded(said, 'database'),
      recorded(said, 'pool'),
      recorded(said, 'api', { failStart: true }),
      recorded(said, 'after'),
    ];
    await expect(startServices(services)).rejects.toThrow('api cannot start');
    expect(said.filter((line) => !line.startsWith('stopped'))).toEqual(['start database', 'start pool', 'stop pool', 'stop database']);
  });

  test('a stop that fails does not keep the services below it running', async () => {
    const said: string[] = [];
    const started = await startServices([recorded(said, 'database'), recorded(said, 'pool', { failStop: true }), recorded(said, 'api')]);
    await expect(started.stop()).rejects.toThrow('pool: pool cannot stop');
    expect(said).toContain('stop database');
  });
});

describe('together', () => {
  test('starts its services in order and stops them side by side, before what is below it', async () => {
    const said: string[] = [];
    const group = together('requests and senders', [recorded(said, 'webhooks', { stopMs: 30 }), recorded(said, 'api', { stopMs: 10 })]);
    const started = await startServices([recorded(said, 'pool'), group]);
    await started.stop();
    expect(said).toEqual([
      'start pool',
      'start webhooks',
      'start api',
      'stop webhooks',
      'stop api',
      'stopped api',
      'stopped webhooks',
      'stop pool',
      'stopped pool',
    ]);
  });

  test('a start that fails within it stops what of it had started', async () => {
    const said: string[] = [];
    const group = together('requests and senders', [recorded(said, 'webhooks'), recorded(said, 'api', { failStart: true })]);
    await expect(startServices([recorded(said, 'pool'), group])).rejects.toThrow('api cannot start');
    expect(said.filter((line) => !line.startsWith('stopped'))).toEqual(['start pool', 'start webhooks', 'stop webhooks', 'stop pool']);
  });
});
