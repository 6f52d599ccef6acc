// A test double of the Hugging Face Hub (the real one is not reachable here), speaking its HTTP protocol as
// @huggingface/hub and huggingface_hub call it; a client finds it through HF_ENDPOINT.
//   GET  /api/models/ORG/NAME/revision/REV     model info: the commit `sha` a revision is at, `gated`, `siblings`
//   GET  /api/models/ORG/NAME/tree/REV         a commit's files (oid, size, lfs {oid, size}), paged by a Link header
//   GET|HEAD /ORG/NAME/resolve/REV/FILE        a small file itself (ETag: its git oid); an LFS file a 302 to the CDN
//                                              (X-Linked-Etag: its SHA-256, X-Linked-Size); both with X-Repo-Commit
//   GET  /cdn/SHA256                           an LFS file's bytes, with Range requests
// Refusals as the Hub words them, in X-Error-Code and X-Error-Message (and the body): a gated repository 401
// GatedRepo without a token, 403 GatedRepo with a token not granted; an unknown token 401; 404 RevisionNotFound,
// EntryNotFound; an unknown repository 401 RepoNotFound (404 with a token). Faults for the tests: a CDN response
// that drops the connection after some bytes, or stalls there, or carries a flipped byte.
import { createHash } from 'node:crypto';
import { readFileSync, readdirSync } from 'node:fs';
import http from 'node:http';
import path from 'node:path';

export type HubRepo = {
  id: string;
  /** Each commit's files (repository path → bytes). */
  commits: Record<string, Record<string, Buffer>>;
  /** Branches and tags → commit. */
  refs: Record<string, string>;
  /** Gated: downloads need a token in `granted`. */
  gated?: boolean;
  granted?: string[];
  /** Sizes the listing claims instead of the real ones (a checkpoint too large for a disk). */
  listedSizes?: Record<string, number>;
};

export type Fault = { file: string; kind: 'drop' | 'stall' | 'corrupt'; afterBytes?: number; times: number };

export type Logged = { method: string; path: string; range?: string; authorization?: string; status: number };

export type HubServer = {
  url: string;
  requests: Logged[];
  faults: Fault[];
  /** Bytes of LFS bodies served (the one-byte probes of fileDownloadInfo not counted), by file name. */
  served: Map<string, number>;
  close: () => Promise<void>;
};

/** Files a repository stores in LFS: the weights (the Hub's .gitattributes) and anything over 10 MB. */
export function isLfs(file: string, bytes: Buffer): boolean {
  return file.endsWith('.safetensors') || bytes.length > 10_000_000;
}

/** A folder's files as a commit's. */
export function filesOf(dir: string): Record<string, Buffer> {
  return Object.fromEntries(readdirSync(dir).map((name) => [name, readFileSync(path.join(dir, name))]));
}

const sha256 = (bytes: Buffer | string) => createHash('sha256').update(bytes).digest('hex');
const gitOid = (bytes: Buffer | string) =>
  createHash('sha1')
    .update(`blob ${Buffer.byteLength(bytes)}\0`)
    .update(bytes)
    .digest('hex');
const pointer = (bytes: Buffer) =>
  `version https://git-lfs.github.com/spec/v1\noid sha256:${sha256(bytes)}\nsize ${bytes.length}\n`;

const TREE_PAGE = 3; // entries per page, so that the listing's Link paging is exercised

export async function startHubServer(options: { repos: HubRepo[]; tokens?: string[] }): Promise<HubServer> {
  const repos = new Map(options.repos.map((repo) => [repo.id, repo]));
  const tokens = new Set([...(options.tokens ?? []), ...options.repos.flatMap((r) => r.granted ?? [])]);
  const requests: Logged[] = [];
  const faults: Fault[] = [];
  const served = new Map<string, number>();
  const lfs = new Map<string, { file: string; bytes: Buffer }>();
  for (const repo of options.repos)
    for (const files of Object.values(repo.commits))
      for (const [file, bytes] of Object.entries(files))
        if (isLfs(file, bytes)) lfs.set(sha256(bytes), { file, bytes });

  const server = http.createServer((request, response) => {
    const url = new URL(request.url!, 'http://hub');
    const entry: Logged = {
      method: request.method!,
      path: url.pathname + url.search,
      range: request.headers.range,
      authorization: request.headers.authorization,
      status: 0,
    };
    requests.push(entry);
    const send = (status: number, headers: Record<string, string | number>, body?: Buffer | string) => {
      entry.status = status;
      response.writeHead(status, headers);
      response.end(request.method === 'HEAD' ? undefined : body);
    };
    const refuse = (status: number, code: string | undefined, message: string, json: boolean) =>
      send(
        status,
        {
          ...(code && { 'X-Error-Code': code }),
          'X-Error-Message': message,
          'Content-Type': json ? 'application/json' : 'text/plain; charset=utf-8',
        },
        json ? JSON.stringify({ error: message }) : message,
      );
    const bearer = request.headers.authorization?.replace(/^Bearer /, '');
    // The repository and revision a route names, or the refusal the Hub gives.
    const find = (id: string, revision: string, json: boolean) => {
      const repo = repos.get(id);
      if (!repo) {
        refuse(bearer ? 404 : 401, 'RepoNotFound', 'Repository not found', json);
        return undefined;
      }
      const commit = repo.commits[revision] ? revision : repo.refs[revision];
      if (!commit) {
        refuse(404, 'RevisionNotFound', `Invalid rev id: ${revision}`, json);
        return undefined;
      }
      return { repo, commit, files: repo.commits[commit]! };
    };

    let match: RegExpExecArray | null;
    if (bearer !== undefined && !tokens.has(bearer))
      return refuse(401, undefined, 'Invalid credentials in Authorization header', true);
    if ((match = /^\/api\/models\/([^/]+\/[^/]+)\/revision\/(.+)$/.exec(url.pathname))) {
      const found = find(match[1]!, decodeURIComponent(match[2]!), true);
      if (!found) return;
      return send(
        200,
        { 'Content-Type': 'application/json' },
        JSON.stringify({
          _id: sha256(found.repo.id).slice(0, 24),
          id: found.repo.id,
          sha: found.commit,
          private: false,
          gated: found.repo.gated ? 'manual' : false,
          downloads: 0,
          likes: 0,
          lastModified: '2025-03-12T00:00:00.000Z',
          pipeline_tag: 'text-generation',
          siblings: Object.keys(found.files).map((rfilename) => ({ rfilename })),
        }),
      );
    }
    if ((match = /^\/api\/models\/([^/]+\/[^/]+)\/tree\/([^/]+)$/.exec(url.pathname))) {
      const found = find(match[1]!, decodeURIComponent(match[2]!), true);
      if (!found) return;
      const entries = Object.entries(found.files).map(([file, bytes]) => {
        const size = found.repo.listedSizes?.[file] ?? bytes.length;
        return isLfs(file, bytes)
          ? {
              type: 'file',
              oid: gitOid(pointer(bytes)),
              size,
              path: file,
              lfs: { oid: sha256(bytes), size, pointerSize: pointer(bytes).length },
            }
          : { type: 'file', oid: gitOid(bytes), size, path: file };
      });
      const cursor = Number(url.searchParams.get('cursor') ?? 0);
      const next = cursor + TREE_PAGE;
      const link = new URL(url.pathname + url.search, `http://${request.headers.host}`);
      link.searchParams.set('cursor', String(next));
      return send(
        200,
        { 'Content-Type': 'application/json', ...(next < entries.length && { Link: `<${link.href}>; rel="next"` }) },
        JSON.stringify(entries.slice(cursor, next)),
      );
    }
    if ((match = /^\/([^/]+\/[^/]+)\/resolve\/([^/]+)\/(.+)$/.exec(url.pathname))) {
      const id = match[1]!;
      const repo = repos.get(id);
      if (repo?.gated && !bearer)
        return refuse(
          401,
          'GatedRepo',
          `Access to model ${id} is restricted. You must have access to it and be authenticated to access it. Please log in.`,
          false,
        );
      if (repo?.gated && !repo.granted?.includes(bearer!))
        return refuse(
          403,
          'GatedRepo',
          `Access to model ${id} is restricted and you are not in the authorized list. Visit http://${request.headers.host}/${id} to ask for access.`,
          false,
        );
      const found = find(id, decodeURIComponent(match[2]!), false);
      if (!found) return;
      const file = decodeURIComponent(match[3]!);
      const bytes = found.files[file];
      if (!bytes) return refuse(404, 'EntryNotFound', `${file} does not exist on "${match[2]}"`, false);
      if (isLfs(file, bytes)) {
        const oid = sha256(bytes);
        return send(302, {
          Location: `/cdn/${oid}?file=${encodeURIComponent(file)}`,
          'X-Repo-Commit': found.commit,
          'X-Linked-Etag': `"${oid}"`,
          'X-Linked-Size': bytes.length,
          ETag: `"${gitOid(pointer(bytes))}"`,
        });
      }
      return sendBytes(bytes, { ETag: `"${gitOid(bytes)}"`, 'X-Repo-Commit': found.commit }, undefined);
    }
    if ((match = /^\/cdn\/([0-9a-f]{64})$/.exec(url.pathname))) {
      const blob = lfs.get(match[1]!);
      if (!blob) return refuse(404, undefined, 'NoSuchKey', false);
      return sendBytes(blob.bytes, { ETag: `"${match[1]}"` }, blob.file);
    }
    return refuse(404, undefined, `no route ${url.pathname}`, false);

    // A file's bytes, whole or the Range asked for; an LFS file's faults applied to a real download (not a probe).
    function sendBytes(bytes: Buffer, headers: Record<string, string>, lfsFile: string | undefined): void {
      const range = /^bytes=(\d+)-(\d*)$/.exec(request.headers.range ?? '');
      const start = range ? Number(range[1]) : 0;
      const end = range && range[2] ? Math.min(Number(range[2]), bytes.length - 1) : bytes.length - 1;
      if (range && start >= bytes.length)
        return send(416, { 'Content-Range': `bytes */${bytes.length}` }, 'Range Not Satisfiable');
      let body = bytes.subarray(start, end + 1);
      const common = { ...headers, 'Accept-Ranges': 'bytes', 'Content-Type': 'application/octet-stream' };
      const status = range ? 206 : 200;
      const rangeHeader: Record<string, string> = range
        ? { 'Content-Range': `bytes ${start}-${end}/${bytes.length}` }
        : {};
      const fault = lfsFile && body.length > 1 ? faults.find((f) => f.file === lfsFile && f.times > 0) : undefined;
      if (lfsFile && body.length > 1 && request.method !== 'HEAD')
        served.set(lfsFile, (served.get(lfsFile) ?? 0) + body.length);
      if (fault?.kind === 'corrupt') {
        fault.times--;
        body = Buffer.from(body);
        body[body.length >> 1] ^= 0xff;
      }
      if (fault?.kind === 'drop' || fault?.kind === 'stall') {
        fault.times--;
        entry.status = status;
        response.writeHead(status, { ...common, ...rangeHeader, 'Content-Length': body.length });
        // The first bytes, then the connection closed mid-body (a FIN after them, so that the client gets every one
        // of them: a reset could discard some), or left open with nothing more sent.
        const cut = fault.kind === 'drop' ? () => request.socket.end() : () => {};
        response.write(body.subarray(0, fault.afterBytes ?? body.length >> 1), cut);
        return;
      }
      send(status, { ...common, ...rangeHeader, 'Content-Length': body.length }, body);
    }
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const { port } = server.address() as { port: number };
  return {
    url: `http://127.0.0.1:${port}`,
    requests,
    faults,
    served,
    close: () =>
      new Promise((resolve) => {
        server.closeAllConnections();
        server.close(() => resolve());
      }),
  };
}
