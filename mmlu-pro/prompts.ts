// The three prompt styles of chigkim/Ollama-MMLU-Pro's run_openai.py (format_example, multi_chat_prompt,
// single_chat_prompt, no_chat_prompt), which keep TIGER-Lab's example format. Strings must match it byte for byte.
import type { ChatMessage } from '../core/chat.ts';
import type { Question } from './data.ts';

export const STYLES = ['multi_chat', 'single_chat', 'no_chat'] as const;
export type Style = (typeof STYLES)[number];

/** What goes over the wire: chat messages for /v1/chat/completions, or text for /v1/completions. */
export type Prompt = { kind: 'chat'; messages: ChatMessage[] } | { kind: 'text'; text: string };

/** Every request stops where the model would start inventing the next question. */
export const STOP_AT_NEXT_QUESTION = 'Question:';

const LETTERS = 'ABCDEFGHIJ';
const THINK_STEP_BY_STEP = "Let's think step by step.";

/** `{subject}` in the system prompt becomes the category name, e.g. "computer science". */
export function systemPromptFor(template: string, category: string): string {
  return template.replaceAll('{subject}', category);
}

/**
 * One question as the reference writes it: "Question: …\nOptions: A. …\nB. …" (trimmed), and its answer text:
 * the CoT without its leading "A: " (the Chinese file writes "A："), or "Let's think step by step." when none.
 */
export function formatExample(
  question: string,
  options: string[],
  cotContent = '',
): { example: string; answer: string } {
  let example = `Question: ${question}\nOptions: `;
  options.forEach((option, i) => {
    example += `${LETTERS[i]}. ${option}\n`;
  });
  const cot = cotContent === '' ? THINK_STEP_BY_STEP : cotContent.replace(/^A[:：] ?/, '');
  return { example: example.trim(), answer: cot.trim() };
}

/** Examples then the question as plain text, ending "Answer: Let's think step by step." (no_chat_prompt). */
function plainText(examples: Question[], question: Question): string {
  let text = '';
  for (const shot of examples) {
    const { example, answer } = formatExample(shot.question, shot.options, shot.cot_content);
    text += `${example}\nAnswer: ${answer}\n\n`;
  }
  const { example, answer } = formatExample(question.question, question.options);
  return `${text}${example}\nAnswer: ${answer}`;
}

/**
 * - multi_chat: system; per example a user turn (the question) and an assistant turn ("Answer: " + CoT); the question.
 * - single_chat: system; one user message holding the examples and the question as plain text.
 * - no_chat: one text: system prompt, blank line, examples and question as plain text.
 * `examples` is empty without --cot.
 */
export function buildPrompt(style: Style, systemPrompt: string, examples: Question[], question: Question): Prompt {
  switch (style) {
    case 'multi_chat': {
      const messages: ChatMessage[] = [{ role: 'system', content: systemPrompt }];
      for (const shot of examples) {
        const { example, answer } = formatExample(shot.question, shot.options, shot.cot_content);
        messages.push({ role: 'user', content: example }, { role: 'assistant', content: `Answer: ${answer}` });
      }
      messages.push({ role: 'user', content: formatExample(question.question, question.options).example });
      return { kind: 'chat', messages };
    }
    case 'single_chat':
      return {
        kind: 'chat',
        messages: [
          { role: 'system', content: systemPrompt },
          { role: 'user', content: plainText(examples, question) },
        ],
      };
    case 'no_chat':
      return { kind: 'text', text: `${systemPrompt}\n\n${plainText(examples, question)}` };
  }
}
