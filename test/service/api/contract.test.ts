// The wire contract is written once (service/api): the schemas the routes register and validate with, the tools the
// editor is given and the service client's types are the same objects. A property added to a schema object at test
// time shows up in the app's registered schemas, in what the routes accept over real HTTP, in the brief the route
// serialises and in the editor's tool definitions; the client's types are the schemas' own (checked by tsc).
import { mkdtempSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import type { Static } from 'typebox';
import { afterEach, describe, expect, it } from 'vitest';
import {
  ChatMessage,
  EpisodeBrief,
  EpisodeCreate,
  ErrorReply,
  TOOL_ARGS,
  SubmitReply,
  ToolReply,
  type ToolName,
} from '../../../service/api/index.ts';
import { buildApp } from '../../../service/app.ts';
import { TOOL_DEFINITIONS } from '../../../service/tools/schemas.ts';
import { AdminClient, EditorClient, ServiceError } from '../../../taskset/service-client.ts';
import { SPEC, TOKENS, sharedTarget } from '../helpers.ts';

// Type-level: the client's types are the schemas' static types, not copies kept in step by hand.
type Same<A, B> = (<T>() => T extends A ? 1 : 2) extends <T>() => T extends B ? 1 : 2 ? true : false;
const clientTypes = {
  create: true as Same<Parameters<AdminClient['createEpisode']>[0], Static<typeof EpisodeCreate>>,
  brief: true as Same<Awaited<ReturnType<EditorClient['brief']>>, Static<typeof EpisodeBrief>>,
  tool: true as Same<Awaited<ReturnType<EditorClient['tool']>>, Static<typeof ToolReply>>,
  submit: true as Same<Awaited<ReturnType<EditorClient['submit']>>, Static<typeof SubmitReply>>,
  error: true as Same<ServiceError['body'], Static<typeof ErrorReply>>,
} satisfies Record<string, true>;

const PROBE = 'contract_probe';
const probe = { type: 'string', description: 'added at test time' };

async function service() {
  const { app } = await buildApp({
    target: await sharedTarget(),
    outputDir: mkdtempSync(path.join(os.tmpdir(), 'iwibench-api-')),
    tokens: TOKENS,
  });
  const url = await app.listen({ host: '127.0.0.1', port: 0 });
  return { app, admin: new AdminClient(url, TOKENS.admin) };
}

/** The status of a call through the real client: 2xx, or the ServiceError's status. */
async function status(call: Promise<unknown>): Promise<number> {
  try {
    await call;
    return 200;
  } catch (error) {
    if (error instanceof ServiceError) return error.status;
    throw error;
  }
}

const withProbe = (spec: object) => ({ ...spec, [PROBE]: 'x' }) as unknown as Static<typeof EpisodeCreate>;
const probedMessage = { role: 'user', content: 'Hi', [PROBE]: 'x' };

afterEach(() => {
  delete (EpisodeCreate.properties as Record<string, unknown>)[PROBE];
  delete (ChatMessage.properties as Record<string, unknown>)[PROBE];
});

describe('the wire contract', () => {
  it('the client types are the schemas’ types', () => {
    expect(Object.values(clientTypes).every((same) => same === true)).toBe(true);
  });

  it('the editor’s tool definitions carry the very schemas the tool routes validate with', () => {
    expect(TOOL_DEFINITIONS.map((t) => t.name)).toEqual(Object.keys(TOOL_ARGS));
    for (const tool of TOOL_DEFINITIONS) expect(tool.parameters).toBe(TOOL_ARGS[tool.name as ToolName]);
  });

  it('without the probe, the routes refuse it (the schemas allow no unknown field)', async () => {
    const { app, admin } = await service();
    try {
      expect(app.getSchemas()).toHaveProperty('EpisodeCreate');
      expect((app.getSchemas().EpisodeCreate as { properties: object }).properties).not.toHaveProperty(PROBE);
      expect(await status(admin.createEpisode(withProbe(SPEC), TOKENS.editor))).toBe(400);
      const editor = await admin.createEpisode(SPEC, TOKENS.editor);
      expect(
        await status(editor.tool('run_target', { sequences: [{ messages: [probedMessage] }], max_new_tokens: 1 })),
      ).toBe(400);
      const brief = await editor.brief();
      expect(brief.tools.find((t) => t.name === 'run_target')).toEqual(JSON.parse(JSON.stringify(TOOL_DEFINITIONS[2])));
    } finally {
      await app.close();
    }
  });

  it('a property added to a schema object appears in the registered schema, the routes, the brief and the tools', async () => {
    (EpisodeCreate.properties as Record<string, unknown>)[PROBE] = probe;
    (ChatMessage.properties as Record<string, unknown>)[PROBE] = probe;
    const runTarget = TOOL_DEFINITIONS.find((t) => t.name === 'run_target')!;
    expect(JSON.stringify(runTarget.parameters)).toContain(PROBE); // the editor's definition holds the same objects
    expect(JSON.stringify(TOOL_DEFINITIONS.find((t) => t.name === 'inspect_target')!.parameters)).toContain(PROBE);

    const { app, admin } = await service();
    try {
      const registered = app.getSchemas().EpisodeCreate as typeof EpisodeCreate;
      expect(registered.properties).toHaveProperty(PROBE, probe);
      expect(registered.properties.practice.items.properties.messages.items.properties).toHaveProperty(PROBE, probe);

      // Over HTTP, through the real client: the create body and a tool body now take the field.
      const editor = await admin.createEpisode(
        withProbe({ ...SPEC, practice: [{ messages: [probedMessage], response: 'Hello.' }] }),
        TOKENS.editor,
      );
      const run = await editor.tool('run_target', { sequences: [{ messages: [probedMessage] }], max_new_tokens: 1 });
      expect(run.tool).toBe('run_target');
      // The brief (serialised by its response schema) carries the tools as they are now.
      const brief = await editor.brief();
      const served = brief.tools.find((t) => t.name === 'run_target')!;
      expect(JSON.stringify(served)).toContain(PROBE);
      expect(served).toEqual(JSON.parse(JSON.stringify(runTarget)));
    } finally {
      await app.close();
    }
  });
});
