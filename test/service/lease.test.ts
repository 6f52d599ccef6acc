// Episode leases: an episode created with lease_seconds is deleted by the service once that long passes without
// POST /episodes/:id/lease (its holder killed: a queue worker's SIGKILL), as DELETE deletes it; a renewed one lives;
// a service restarted from its folder gives each leased episode a whole lease from its start; bad leases are refused
// and create nothing.
import { setTimeout as sleep } from 'node:timers/promises';
import { afterAll, describe, expect, it } from 'vitest';
import { ADMIN, SPEC, harness, type Harness } from './helpers.ts';

const apps: Harness[] = [];
afterAll(async () => {
  for (const h of apps) await h.app.close();
});
async function service(outputDir?: string): Promise<Harness> {
  const h = await harness(outputDir);
  apps.push(h);
  return h;
}
const get = (h: Harness, id: string) => h.app.inject({ method: 'GET', url: `/episodes/${id}`, headers: ADMIN });
const renew = (h: Harness, id: string) =>
  h.app.inject({ method: 'POST', url: `/episodes/${id}/lease`, headers: ADMIN });

describe('episode leases', () => {
  it('deletes an episode whose lease runs out, keeps one that is renewed, and leaves one without a lease', async () => {
    const h = await service();
    const lapsed = await h.episode({ lease_seconds: 1 });
    const renewed = await h.episode({ lease_seconds: 1 });
    const unleased = await h.episode();
    const summary = (await get(h, lapsed.id)).json();
    expect(summary.lease.seconds).toBe(1);
    expect(Date.parse(summary.lease.expires_at)).toBeGreaterThan(Date.now());
    expect((await get(h, unleased.id)).json().lease).toBeNull();
    // The lease (1 s) and the sweep (every second) pass twice over while `renewed` is renewed every 350 ms.
    for (let i = 0; i < 8; i++) {
      await sleep(350);
      expect((await renew(h, renewed.id)).statusCode).toBe(200);
    }
    const gone = await get(h, lapsed.id);
    expect(gone.statusCode).toBe(404);
    expect(gone.json().code).toBe('EPISODE_NOT_FOUND');
    // Its editor is refused as for any deleted episode.
    const brief = await h.app.inject({ method: 'GET', url: `/episodes/${lapsed.id}/brief`, headers: lapsed.headers });
    expect(brief.statusCode).toBe(403);
    expect((await get(h, renewed.id)).statusCode).toBe(200);
    expect((await get(h, unleased.id)).statusCode).toBe(200);
    expect(h.registry.list().map((e) => e.id)).not.toContain(lapsed.id);
  });

  it('refuses to renew an episode without a lease or one that does not exist', async () => {
    const h = await service();
    const unleased = await h.episode();
    const none = await renew(h, unleased.id);
    expect(none.statusCode).toBe(409);
    expect(none.json().code).toBe('EPISODE_NO_LEASE');
    expect((await renew(h, 'ep-0000000000000000')).statusCode).toBe(404);
    const editor = await h.app.inject({
      method: 'POST',
      url: `/episodes/${unleased.id}/lease`,
      headers: unleased.headers,
    });
    expect(editor.statusCode).toBe(403); // the admin's route: an editor cannot keep its episode alive
  });

  it('refuses a lease that is not a whole number of seconds in 1…86400, and creates nothing', async () => {
    const h = await service();
    const before = h.registry.list().length;
    for (const lease_seconds of [0, -5, 86_401, 1.5, '30']) {
      const response = await h.app.inject({
        method: 'POST',
        url: '/episodes',
        headers: ADMIN,
        payload: { ...SPEC, lease_seconds },
      });
      expect(response.statusCode).toBe(400);
      expect(response.json().message).toMatch(/lease_seconds/);
    }
    expect(h.registry.list().length).toBe(before);
  });

  it('gives a restored leased episode a whole lease from the restart: it goes unless its holder renews it', async () => {
    const first = await service();
    const { id } = await first.episode({ lease_seconds: 2 });
    await first.app.close();
    apps.splice(apps.indexOf(first), 1);
    first.target.store.dropEpisode(id); // the tests share one target; a restarted process starts with an empty store
    const second = await service(first.outputDir);
    const restored = (await get(second, id)).json();
    expect(Date.parse(restored.lease.expires_at)).toBeGreaterThan(Date.now() + 1000);
    await sleep(3200);
    expect((await get(second, id)).statusCode).toBe(404);
  });
});
