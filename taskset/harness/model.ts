// What the run loop needs from an editor, whatever answers it (Chat Completions, the Responses API, a script):
// build the next request, send it, and take the results of the tool calls it made.
import type { Usage } from './trace.ts';

/** One tool call as the editor made it; `arguments` is the raw JSON text, which may be invalid. */
export type ToolCall = { id: string; name: string; arguments: string };

export type EditorReply = {
  /** The reply's text (empty when it has none). */
  text: string;
  toolCalls: ToolCall[];
  usage: Usage;
  /** The reply hit the output cap (finish_reason `length`, status `incomplete`). */
  truncated: boolean;
};

export type SentRequest = { response: unknown; requestId: string | null; reply: EditorReply };

export interface EditorModel<Request = unknown> {
  /** Which protocol, for the trace. */
  readonly api: string;
  /** The body of the next request; the loop writes it to the trace before sending it. */
  nextRequest(): Request;
  /** Sends it; on success the reply joins the conversation. Throws the SDK's errors after its retries. */
  send(request: Request): Promise<SentRequest>;
  /** The results of the last reply's tool calls, in call order, for the next request. */
  addToolResults(results: { callId: string; output: string }[]): void;
}
