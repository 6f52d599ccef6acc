// Public surface of the MMLU-Pro runner (mmlu-pro/README.md), and the only way into mmlu-pro/ from outside it
// (test/core/layers.test.ts). The CLI is scripts/mmlu-pro.ts.
export { runMmluPro, type RunSummary, type RunInfo, type RunEvents, type RunOptions } from './runner.ts';
export {
  DEFAULTS,
  FLAG_SETTINGS,
  ConfigError,
  readConfigFile,
  resolveConfig,
  outputFolder,
  type MmluProConfig,
  type FlagOverrides,
} from './config.ts';
export {
  CATEGORIES,
  loadDataset,
  resolveDataDir,
  findSplitFiles,
  readQuestionFile,
  selectQuestions,
  examplesByCategory,
  type Category,
  type Question,
  type Dataset,
  type DataFile,
} from './data.ts';
export { LANGUAGES, LANGUAGE_CODES, type Language, type LanguageCode } from './languages.ts';
export { STYLES, buildPrompt, formatExample, systemPromptFor, type Style, type Prompt } from './prompts.ts';
export { extractAnswer } from './extract.ts';
export { CPythonRandom } from './cpython-random.ts';
export {
  SCORING_PROFILES,
  isScoringProfile,
  GUESS_SEED,
  guessIndex,
  originalGuess,
  categorySummary,
  scoreOne,
  tally,
  rates,
  type ScoringProfile,
  type Tally,
  type Rates,
} from './score.ts';
export { rescoreFolder } from './rescore.ts';
export {
  createCompletionClient,
  FatalServerError,
  type CompletionClient,
  type CompletionResult,
  type RequestFailure,
  type Usage,
} from './client.ts';
export { ResultStore, questionKey, writeFileAtomic, writeJsonAtomic, type ResultRecord } from './results.ts';
export {
  markdownTable,
  reportText,
  tokenStats,
  type CategoryScore,
  type FailedQuestion,
  type TokenStats,
} from './report.ts';
export {
  compareFolders,
  comparisonTable,
  loadOutcomes,
  scoringOf,
  type Comparison,
  type PairedScore,
} from './compare.ts';
export { mcnemarExact } from './stats.ts';
export { pythonFixed, pythonFloat, pythonJson, pyStrip } from './python.ts';

// A fake OpenAI-compatible server whose replies a script decides: for tests and `bench mmlu-pro`.
export { startFakeServer, type FakeReply, type FakeRequest, type FakeServer } from './fake-server.ts';
