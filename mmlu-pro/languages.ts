// The five languages of Nero10578/OAI-API-MMLU-Pro at 6c0efcf (run_openai.py, config.toml): one row of data each.
// Every string is copied from that commit byte for byte (docs/mmlu-pro.md): the question and options labels and the
// chain-of-thought line of format_example, the phrase of extract_answer (rule 1, "<phrase> (X)") and of extract_again
// (rule 2, "<phrase>: X"), and the system prompts of config.toml (en active, the others commented out there).
// The Korean labels are written in decomposed jamo (NFD) in the original, the rest of its Korean precomposed: the
// escapes below keep each as it is. "Answer: " before the CoT stays English in every language, as in the original.

export type LanguageCode = 'en' | 'id' | 'ja' | 'ko' | 'zh';

export type Language = {
  code: LanguageCode;
  /** format_example: `<questionLabel><question>\n<optionsLabel>` then "A. …\n" per option. */
  questionLabel: string;
  optionsLabel: string;
  /** The CoT text of the asked question (and of an example without one). */
  thinkStepByStep: string;
  /** Rule 1 is `<answerIs> \(?([A-J])\)?<answerIsEnd>`, rule 2 `.*<answerIs>:\s*\(?([A-J])\)?`; case-sensitive. */
  answerIs: string;
  answerIsEnd: string;
  /** config.toml's system prompt for this language; `{subject}` becomes the category name. */
  systemPrompt: string;
};

export const LANGUAGES: Record<LanguageCode, Language> = {
  en: {
    code: 'en',
    questionLabel: 'Question: ',
    optionsLabel: 'Options: ',
    thinkStepByStep: "Let's think step by step.",
    answerIs: 'Answer is',
    answerIsEnd: '',
    systemPrompt:
      'You are an expert that knows everything. You are tasked with answering a multiple-choice question. The following is a multiple choice question (with answers) about {subject}. Give your final answer in the format of `The answer is (chosen answer)`.',
  },
  id: {
    code: 'id',
    questionLabel: 'Pertanyaan: ',
    optionsLabel: 'Pilihan: ',
    thinkStepByStep: 'Mari berpikir selangkah demi selangkah.',
    answerIs: 'Jawaban adalah',
    answerIsEnd: '',
    systemPrompt:
      "Anda adalah seseorang yang pintar dan mengetahui segalanya. Anda diberi perintah untuk menjawab pertanyaan pilihan ganda. Berikut adalah pertanyaan pilihan ganda tentang {subject}. Jawab dengan format: 'Jawabannya adalah (pilihan jawaban)'.",
  },
  ja: {
    code: 'ja',
    questionLabel: '\u8cea\u554f: ',
    optionsLabel: '\u9078\u629e\u80a2: ',
    thinkStepByStep: '\u6bb5\u968e\u7684\u306b\u8003\u3048\u3066\u307f\u307e\u3057\u3087\u3046\u3002',
    answerIs: '\u7b54\u3048\u306f',
    answerIsEnd: ' \u3067\u3059',
    systemPrompt:
      '\u3042\u306a\u305f\u306f\u3059\u3079\u3066\u3092\u77e5\u3063\u3066\u3044\u308b\u5c02\u9580\u5bb6\u3067\u3059\u3002\u591a\u80a2\u9078\u629e\u5f0f\u306e\u8cea\u554f\u306b\u56de\u7b54\u3059\u308b\u3053\u3068\u304c\u6c42\u3081\u3089\u308c\u307e\u3059\u3002\u6b21\u306f\u3001{subject} \u306b\u95a2\u3059\u308b\u591a\u80a2\u9078\u629e\u5f0f\u306e\u8cea\u554f\u3067\u3059\u3002\u6700\u7d42\u7684\u306a\u56de\u7b54\u3092\u300c\u7b54\u3048\u306f (\u9078\u629e\u3057\u305f\u56de\u7b54) \u3067\u3059\u300d\u3068\u3044\u3046\u5f62\u5f0f\u3067\u5165\u529b\u3057\u3066\u304f\u3060\u3055\u3044\u3002',
  },
  ko: {
    code: 'ko',
    // 질문 / 선택지 in jamo (NFD), as the original has them.
    questionLabel: '\u110c\u1175\u11af\u1106\u116e\u11ab: ',
    optionsLabel: '\u1109\u1165\u11ab\u1110\u1162\u11a8\u110c\u1175: ',
    thinkStepByStep: '\ub2e8\uacc4\ubcc4\ub85c \uc0dd\uac01\ud574 \ubd05\uc2dc\ub2e4.',
    answerIs: '\ub300\ub2f5\uc740',
    answerIsEnd: '',
    systemPrompt:
      "\ub2f9\uc2e0\uc740 \ubaa8\ub4e0 \uac83\uc744 \uc544\ub294 \uc804\ubb38\uac00\uc785\ub2c8\ub2e4. \ub2f9\uc2e0\uc740 \uac1d\uad00\uc2dd \uc9c8\ubb38\uc5d0 \ub2f5\ud558\ub294 \uc784\ubb34\ub97c \ub9e1\uace0 \uc788\uc2b5\ub2c8\ub2e4. \ub2e4\uc74c\uc740 {subject}\uc5d0 \uad00\ud55c \uac1d\uad00\uc2dd \uc9c8\ubb38(\ub2f5\ubcc0 \ud3ec\ud568)\uc785\ub2c8\ub2e4. \ucd5c\uc885 \ub2f5\ubcc0\uc740 '\ub300\ub2f5\uc740 (\uc120\ud0dd\ub41c \ub2f5\ubcc0)' \ud615\uc2dd\uc73c\ub85c \uc791\uc131\ud574 \uc8fc\uc138\uc694.",
  },
  zh: {
    code: 'zh',
    // A full-width colon after 问题, an ASCII one after 选项, as the original has them.
    questionLabel: '\u95ee\u9898\uff1a',
    optionsLabel: '\u9009\u9879: ',
    thinkStepByStep: '\u8ba9\u6211\u4eec\u4e00\u6b65\u4e00\u6b65\u601d\u8003\u3002',
    answerIs: '\u7b54\u6848\u662f',
    answerIsEnd: '',
    systemPrompt:
      '\u4f60\u662f\u4e00\u4f4d\u65e0\u6240\u4e0d\u77e5\u7684\u4e13\u5bb6\u3002\u4f60\u7684\u4efb\u52a1\u662f\u56de\u7b54\u4e00\u9053\u591a\u9879\u9009\u62e9\u9898\u3002\u4ee5\u4e0b\u662f\u4e00\u9053\u5173\u4e8e{subject}\u7684\u591a\u9879\u9009\u62e9\u9898\uff08\u9644\u7b54\u6848\uff09\u3002\u8bf7\u4ee5\u201c\u7b54\u6848\u662f\uff08\u9009\u5b9a\u7b54\u6848\uff09\u201d\u7684\u683c\u5f0f\u7ed9\u51fa\u4f60\u7684\u6700\u7ec8\u7b54\u6848\u3002',
  },
};

export const LANGUAGE_CODES = Object.keys(LANGUAGES) as LanguageCode[];

/** Case-sensitive, as the original's `language == "en"`: "ID" matches no branch there (its run fails). */
export function isLanguageCode(value: string): value is LanguageCode {
  return (LANGUAGE_CODES as string[]).includes(value);
}
