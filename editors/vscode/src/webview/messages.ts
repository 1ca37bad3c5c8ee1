// Messages between the extension host and the chat webview.
import type { ChatChange, ChatItem } from "../chat/model";
import type { SessionViewState } from "../session";
import type { MentionItem } from "../mentions";

export type ToWebview =
	| { type: "snapshot"; items: ChatItem[]; state: SessionViewState; history: string[] }
	| { type: "changes"; changes: ChatChange[] }
	| { type: "state"; state: SessionViewState }
	| { type: "focusInput" }
	| { type: "prefill"; text: string }
	| { type: "mentionItems"; seq: number; items: MentionItem[] }
	| { type: "perf" }
	| { type: "perfReset" };

export type FromWebview =
	| { type: "ready" }
	| { type: "send"; text: string; includeActiveFile: boolean }
	| { type: "stop" }
	| { type: "mentionQuery"; seq: number; query: string }
	| { type: "mentionPick"; token: string; id?: string }
	| { type: "newSession" }
	| { type: "pickSession" }
	| { type: "pickModel" }
	| { type: "pickMode" }
	| { type: "revert"; turnId?: string }
	| { type: "removeContext"; id: string }
	| { type: "toggleActiveFile"; on: boolean }
	| { type: "review"; reviewId: string; action: "accept" | "session" | "reject" | "show" }
	| { type: "nextReview" }
	| { type: "copy"; text: string }
	| { type: "openLink"; href: string }
	| { type: "restart" }
	| { type: "showLog" }
	| { type: "openSettings" }
	| { type: "perf"; data: unknown }
	| { type: "error"; message: string };
