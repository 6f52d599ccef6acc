// The five languages of the OpenAI-API MMLU-Pro fork (Nero10578/OAI-API-MMLU-Pro): one row of data each.
// What differs per language: the file-name suffix, the system prompt, the word the translators used for the "N/A"
// option padding, and the closing phrases the original's extraction looks for (rule 1 "<phrase> (X)", rule 2
// "<label>: X"). The prompt template ("Question:", "Options:", "Answer:") stays English, as in the fork.
//
// Sources (mmlu-pro/README.md "Languages"): the English, Indonesian and Japanese system prompts and phrases are the
// fork's (its config.toml and run_openai_ja.py / run_openai_id.py); the Korean and Chinese ones are written in the same
// shape, with the closing phrase the fork's own translated validation files use ("대답은 (X)입니다", "答案是（X）").

export type LanguageCode = 'en' | 'id' | 'ja' | 'ko' | 'zh';

export type Language = {
  code: LanguageCode;
  /** Suffix of `MMLU-Pro-Test-<suffix>.json` / `MMLU-Pro-Validation-<suffix>.json`, spelled as the fork spells it. */
  fileSuffix: string;
  /** `{subject}` is replaced by the category name. */
  systemPrompt: string;
  /** Option padding to drop besides "N/A": the translated files translated the padding too (checked against en). */
  padding: string[];
  /** Regex source of the original's rule 1 before " (X)": "answer is", "Jawabannya adalah", … */
  answerIs: string;
  /** Regex source of what rule 1 wants after "(X)": Japanese " です"; empty elsewhere. */
  answerIsEnd: string;
  /** Regex source of the original's rule 2 label, before ":": "[aA]nswer", … */
  answerLabel: string;
};

export const LANGUAGES: Record<LanguageCode, Language> = {
  en: {
    code: 'en',
    fileSuffix: 'en',
    systemPrompt:
      'You are an expert that knows everything. You are tasked with answering a multiple-choice question. The following is a multiple choice question (with answers) about {subject}. Give your final answer in the format of `The answer is (chosen answer)`.',
    padding: [],
    answerIs: 'answer is',
    answerIsEnd: '',
    answerLabel: '[aA]nswer',
  },
  id: {
    code: 'id',
    fileSuffix: 'ID',
    systemPrompt:
      "Anda adalah seseorang yang pintar dan mengetahui segalanya. Anda diberi perintah untuk menjawab pertanyaan pilihan ganda. Berikut adalah pertanyaan pilihan ganda tentang {subject}. Jawab dengan format: 'Jawabannya adalah (pilihan jawaban)'.",
    padding: ['T/A'],
    answerIs: 'Jawabannya adalah',
    answerIsEnd: '',
    answerLabel: '[jJ]awaban',
  },
  ja: {
    code: 'ja',
    fileSuffix: 'JA',
    systemPrompt:
      'あなたはすべてを知っている専門家です。多肢選択式の質問に回答することが求められます。次は、{subject} に関する多肢選択式の質問です。最終的な回答を「答えは (選択した回答) です」という形式で入力してください。',
    padding: ['該当なし'],
    answerIs: '答えは',
    answerIsEnd: ' です',
    answerLabel: '答えは',
  },
  ko: {
    code: 'ko',
    fileSuffix: 'ko',
    systemPrompt:
      "당신은 모든 것을 알고 있는 전문가입니다. 객관식 질문에 답하는 임무가 주어졌습니다. 다음은 {subject}에 관한 객관식 질문입니다. 최종 답변을 '대답은 (선택한 답)입니다' 형식으로 제시하세요.",
    padding: ['해당 없음'],
    answerIs: '대답은',
    answerIsEnd: '',
    answerLabel: '대답',
  },
  zh: {
    code: 'zh',
    fileSuffix: 'zh',
    systemPrompt:
      '你是一位无所不知的专家。你的任务是回答一道多项选择题。以下是关于{subject}的多项选择题。请以“答案是（所选答案）”的格式给出你的最终答案。',
    padding: ['不适用'],
    answerIs: '答案是',
    answerIsEnd: '',
    answerLabel: '答案',
  },
};

export const LANGUAGE_CODES = Object.keys(LANGUAGES) as LanguageCode[];

export function isLanguageCode(value: string): value is LanguageCode {
  return (LANGUAGE_CODES as string[]).includes(value);
}
