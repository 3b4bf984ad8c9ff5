import { afterAll, beforeAll, describe, expect, test } from 'vitest';
import { startTestApp, type TestApp } from './harness.ts';

let app: TestApp;
beforeAll(async () => {
  app = await startTestApp();
});
afterAll(async () => app?.close());

describe('smoke', () => {
  test('users/me with a session', async () => {
    const user = await app.user({ name: 'Ada' });
    const res = await app.get('/v1/users/me', { session: user.session });
    expect(res.status).toBe(200);
    expect(res.body).toMatchObject({ id: user.id, email: user.email, name: 'Ada' });
  });
});
