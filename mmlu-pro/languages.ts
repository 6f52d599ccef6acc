// The five languages of the OpenAI-API MMLU-Pro fork (Nero10578/OAI-API-MMLU-Pro): one row of data each.
// What differs per language is data only: the file-name suffix, the default system prompt and the word the
// translators used for the "N/A" option padding. The prompt template ("Question:", "Options:", "Answer:") and the
// extraction rules stay English, as in the fork, so that scores stay comparable across languages.

export type LanguageCode = 'en' | 'id' | 'ja' | 'ko' | 'zh';

export type Language = {
  code: LanguageCode;
  /** Suffix of `MMLU-Pro-Test-<suffix>.json` / `MMLU-Pro-Validation-<suffix>.json`, spelled as the fork spells it. */
  fileSuffix: string;
  /** `{subject}` is replaced by the category name. Each asks for the English closing phrase the extractor reads. */
  systemPrompt: string;
  /** Option padding to drop besides "N/A": the translated files translated the padding too (checked against en). */
  padding: string[];
};

// The English prompt is TIGER-Lab's evaluate_from_local.py prompt, as in chigkim/Ollama-MMLU-Pro's config.toml.
export const LANGUAGES: Record<LanguageCode, Language> = {
  en: {
    code: 'en',
    fileSuffix: 'en',
    systemPrompt:
      'The following are multiple choice questions (with answers) about {subject}. Think step by step and then finish your answer with "the answer is (X)" where X is the correct letter choice.',
    padding: [],
  },
  id: {
    code: 'id',
    fileSuffix: 'ID',
    systemPrompt:
      'Berikut adalah pertanyaan pilihan ganda (beserta jawabannya) tentang {subject}. Pikirkan langkah demi langkah, lalu akhiri jawaban Anda dengan "the answer is (X)" di mana X adalah huruf pilihan yang benar.',
    padding: ['T/A'],
  },
  ja: {
    code: 'ja',
    fileSuffix: 'JA',
    systemPrompt:
      '以下は{subject}に関する多肢選択式の質問（解答付き）です。段階的に考え、最後に "the answer is (X)" と書いて回答を締めくくってください。X は正しい選択肢の文字です。',
    padding: ['該当なし'],
  },
  ko: {
    code: 'ko',
    fileSuffix: 'ko',
    systemPrompt:
      '다음은 {subject}에 관한 객관식 문제(정답 포함)입니다. 단계별로 생각한 다음 "the answer is (X)"로 답을 마무리하세요. X는 정답 선택지의 문자입니다.',
    padding: ['해당 없음'],
  },
  zh: {
    code: 'zh',
    fileSuffix: 'zh',
    systemPrompt: '以下是关于{subject}的多项选择题（附答案）。请逐步思考，然后以 "the answer is (X)" 结束你的回答，其中 X 是正确选项的字母。',
    padding: ['不适用'],
  },
};

export const LANGUAGE_CODES = Object.keys(LANGUAGES) as LanguageCode[];

export function isLanguageCode(value: string): value is LanguageCode {
  return (LANGUAGE_CODES as string[]).includes(value);
}
