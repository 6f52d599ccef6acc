// The three prompt styles of OAI-API-MMLU-Pro 6c0efcf's run_openai.py (format_example, multi_chat_prompt,
// single_chat_prompt, no_chat_prompt), per language. Strings must match it byte for byte (languages.ts).
import type { ChatMessage } from '../core/chat.ts';
import type { Question } from './data.ts';
import { LANGUAGES, type LanguageCode } from './languages.ts';
import { pyStrip } from './python.ts';

export const STYLES = ['multi_chat', 'single_chat', 'no_chat'] as const;
export type Style = (typeof STYLES)[number];

/** What goes over the wire: chat messages for /v1/chat/completions, or text for /v1/completions. */
export type Prompt = { kind: 'chat'; messages: ChatMessage[] } | { kind: 'text'; text: string };

const LETTERS = 'ABCDEFGHIJ';

/** `{subject}` in the system prompt becomes the category name, e.g. "computer science". */
export function systemPromptFor(template: string, category: string): string {
  return template.replaceAll('{subject}', category);
}

/**
 * One question as the original writes it: "<Question: >…\n<Options: >A. …\nB. …" (stripped), and its answer text:
 * the CoT without a leading "A: " (only that: the Chinese file's "A：" stays), or the language's "Let's think step by
 * step." when there is none. Both stripped as Python strips.
 */
export function formatExample(
  question: string,
  options: string[],
  cotContent = '',
  language: LanguageCode = 'en',
): { example: string; answer: string } {
  const { questionLabel, optionsLabel, thinkStepByStep } = LANGUAGES[language];
  let example = `${questionLabel}${question}\n${optionsLabel}`;
  options.forEach((option, i) => {
    example += `${LETTERS[i]}. ${option}\n`;
  });
  let cot = cotContent === '' ? thinkStepByStep : cotContent;
  if (cot.startsWith('A: ')) cot = cot.slice(3);
  return { example: pyStrip(example), answer: pyStrip(cot) };
}

/** Examples then the question as plain text, ending "Answer: <think step by step>" (no_chat_prompt). */
function plainText(examples: Question[], question: Question, language: LanguageCode): string {
  let text = '';
  for (const shot of examples) {
    const { example, answer } = formatExample(shot.question, shot.options, shot.cot_content, language);
    text += `${example}\nAnswer: ${answer}\n\n`;
  }
  const { example, answer } = formatExample(question.question, question.options, '', language);
  return `${text}${example}\nAnswer: ${answer}`;
}

/**
 * - multi_chat: system; per example a user turn (the question) and an assistant turn ("Answer: " + CoT); the question.
 * - single_chat: system; one user message holding the examples and the question as plain text.
 * - no_chat: one text: system prompt, blank line, examples and question as plain text.
 * `examples` is empty without --cot.
 */
export function buildPrompt(
  style: Style,
  systemPrompt: string,
  examples: Question[],
  question: Question,
  language: LanguageCode = 'en',
): Prompt {
  switch (style) {
    case 'multi_chat': {
      const messages: ChatMessage[] = [{ role: 'system', content: systemPrompt }];
      for (const shot of examples) {
        const { example, answer } = formatExample(shot.question, shot.options, shot.cot_content, language);
        messages.push({ role: 'user', content: example }, { role: 'assistant', content: `Answer: ${answer}` });
      }
      messages.push({
        role: 'user',
        content: formatExample(question.question, question.options, '', language).example,
      });
      return { kind: 'chat', messages };
    }
    case 'single_chat':
      return {
        kind: 'chat',
        messages: [
          { role: 'system', content: systemPrompt },
          { role: 'user', content: plainText(examples, question, language) },
        ],
      };
    case 'no_chat':
      return { kind: 'text', text: `${systemPrompt}\n\n${plainText(examples, question, language)}` };
  }
}
