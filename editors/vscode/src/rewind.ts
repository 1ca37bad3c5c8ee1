// Rewind: back to before a turn of the chat's session. The daemon restores the files that turn
// and the later ones changed — never a file changed since, which it names — and continues the
// conversation before the turn in a new session; the chat switches to it and the prompt box
// holds the turn's prompt, to send again, edited or not.
import * as vscode from "vscode";
import { errorMessage, type DaemonClient } from "./daemon/client";
import { Method, type SessionRewindResult } from "./protocol";
import type { SessionController } from "./session";
import { showError } from "./testmode";

export interface RewindTargets {
	daemon: DaemonClient;
	session: SessionController;
	chat: { reveal(focusInput: boolean): Promise<void>; prefill(text: string): void };
}

/** The session's prompts with their turns, newest first. */
export function userTurns(session: SessionController): { turnId: string; text: string }[] {
	const out: { turnId: string; text: string }[] = [];
	const seen = new Set<string>();
	for (const it of session.items) {
		if (it.kind === "user" && it.turnId && !seen.has(it.turnId)) {
			seen.add(it.turnId);
			out.push({ turnId: it.turnId, text: it.text });
		}
	}
	return out.reverse();
}

/** Rewinds to before turnId, or a turn the user picks. Returns what the daemon did. */
export async function rewind(t: RewindTargets, turnId?: string): Promise<SessionRewindResult | undefined> {
	const sessionId = t.session.sessionId;
	if (!sessionId) {
		void vscode.window.showInformationMessage("agentd: no session to rewind.");
		return undefined;
	}
	if (!turnId) {
		const turns = userTurns(t.session);
		if (!turns.length) {
			void vscode.window.showInformationMessage("agentd: the session has no turn to go back to.");
			return undefined;
		}
		const picked = await vscode.window.showQuickPick(
			turns.map((u) => ({ label: u.text.split("\n")[0] || "(empty prompt)", description: u.turnId, turnId: u.turnId })),
			{ title: "agentd: rewind to before…", placeHolder: "The files of that turn and the later ones are restored (never yours)" },
		);
		if (!picked) return undefined;
		turnId = picked.turnId;
	}
	let r: SessionRewindResult;
	try {
		r = await t.daemon.request(Method.SessionRewind, { sessionId, turnId });
	} catch (err) {
		showError(`agentd: rewind failed: ${errorMessage(err)}`);
		return undefined;
	}
	await t.session.attach(r.session.sessionId);
	await t.chat.reveal(true);
	t.chat.prefill(r.prompt);
	const restored = r.restored.length ? `restored ${r.restored.join(", ")}` : "no file restored";
	const skipped = r.skipped.map((s) => `${s.path} left as it is: ${s.reason}`).join("; ");
	const msg = `agentd: back to before turn ${r.turnId}: ${restored}${skipped ? `; ${skipped}` : ""}`;
	if (r.skipped.length) void vscode.window.showWarningMessage(msg);
	else void vscode.window.showInformationMessage(msg);
	return r;
}
