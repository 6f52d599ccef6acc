// Lanes: the queue of attempts is one BullMQ queue per arithmetic (`iwibench-attempts.<arithmetic>`, the name of
// engine/arithmetic.ts: precision, device and the engine's version of them). A worker takes the jobs of its own
// service's arithmetic only, so a job it cannot run that way is never taken, delayed or failed by it: it waits for a
// worker that computes it (docs/decisions.md, "The queue: one result and its folder (issue 49)"). The operator commands
// act on every lane; the lanes enqueued on are a Redis hash (lane → arithmetic) beside BullMQ's keys, with the
// queue's id and its paused mark.
import { randomBytes } from 'node:crypto';
import { Queue, type RedisOptions } from 'bullmq';
import { Redis } from 'ioredis';
import { QUEUE_NAME } from './connection.ts';

/** Every lane enqueued on, lane → arithmetic. */
export const LANES_KEY = `${QUEUE_NAME}:lanes`;
/** This queue's identity, set once: a try folder records it, so that a sweep knows its own queue's tries. */
export const QUEUE_ID_KEY = `${QUEUE_NAME}:queue-id`;
/** Set by `pilot pause`: a lane first enqueued while it is set starts paused too. */
export const PAUSED_KEY = `${QUEUE_NAME}:paused`;
/** BullMQ's key prefix (its default, which every queue here uses). */
export const PREFIX = 'bull';

/** The lane of an arithmetic: a BullMQ queue name (no ':'; '/' and '+' become '_' for bull-board's URLs). */
export const laneName = (arithmetic: string) => `${QUEUE_NAME}.${arithmetic.replace(/[^A-Za-z0-9._-]+/g, '_')}`;

/** A key of a job of a lane (`bull:<lane>:<id><suffix>`), as BullMQ names it. */
export const jobKey = (lane: string, id: string, suffix = '') => `${PREFIX}:${lane}:${id}${suffix}`;

/** BullMQ's lists of a queue: one of them exists while the queue holds a job. */
const STATE_KEYS = ['wait', 'paused', 'active', 'delayed', 'prioritized', 'completed', 'failed'];

/**
 * The lanes, sorted; the single queue of before lanes (`iwibench-attempts`) too while it holds jobs, so that its jobs
 * are seen, cleaned and counted (no worker takes them: enqueue them again).
 */
export async function listLanes(client: Redis): Promise<{ lane: string; arithmetic: string }[]> {
  const lanes = Object.entries(await client.hgetall(LANES_KEY)).map(([lane, arithmetic]) => ({ lane, arithmetic }));
  const legacy = await client.exists(...STATE_KEYS.map((state) => `${PREFIX}:${QUEUE_NAME}:${state}`));
  if (legacy > 0) lanes.push({ lane: QUEUE_NAME, arithmetic: '(before lanes)' });
  return lanes.sort((a, b) => (a.lane < b.lane ? -1 : 1));
}

/** The queue's id, made on first use. */
export async function queueId(client: Redis): Promise<string> {
  await client.set(QUEUE_ID_KEY, randomBytes(8).toString('hex'), 'NX');
  return (await client.get(QUEUE_ID_KEY))!;
}

/** Every lane's queue on one shared connection, for an operator command or an enqueue; closed after `work`. */
export class Lanes {
  private readonly queues = new Map<string, Queue>();

  private constructor(readonly client: Redis) {}

  static async use<T>(connection: RedisOptions, work: (lanes: Lanes) => Promise<T>): Promise<T> {
    const client = new Redis(connection);
    client.on('error', () => {}); // a command's own rejection says what went wrong
    const lanes = new Lanes(client);
    try {
      return await work(lanes);
    } finally {
      await Promise.all([...lanes.queues.values()].map((queue) => queue.close()));
      client.disconnect();
    }
  }

  /** One lane's queue (on the shared connection). */
  queue(lane: string): Queue {
    let queue = this.queues.get(lane);
    if (!queue) {
      queue = new Queue(lane, { connection: this.client });
      this.queues.set(lane, queue);
    }
    return queue;
  }

  /** Every lane's queue, with its arithmetic. */
  async all(): Promise<{ lane: string; arithmetic: string; queue: Queue }[]> {
    return (await listLanes(this.client)).map((l) => ({ ...l, queue: this.queue(l.lane) }));
  }

  /** Registers a lane before its first job; paused if the queue is. */
  async open(arithmetic: string): Promise<Queue> {
    const lane = laneName(arithmetic);
    const queue = this.queue(lane);
    if ((await this.client.hsetnx(LANES_KEY, lane, arithmetic)) === 1 && (await this.client.exists(PAUSED_KEY)))
      await queue.pause();
    return queue;
  }
}
