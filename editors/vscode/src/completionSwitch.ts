// When inline completion is on (src/completion.ts), apart from VS Code so that it can be tested.

export type CompletionSetting = "auto" | "on" | "off";

/** Whether completion is on for a language: the per-language switch first, then the setting
 * ("auto": on when someone configured a completion model). */
export function completionOn(setting: CompletionSetting, languages: Record<string, boolean>, languageId: string, configured: boolean): boolean {
	const perLanguage = languages[languageId];
	if (typeof perLanguage === "boolean") return perLanguage;
	if (setting === "on") return true;
	if (setting === "off") return false;
	return configured;
}
