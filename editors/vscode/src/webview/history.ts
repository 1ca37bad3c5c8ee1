// The chat's prompt history: ↑ on the input's first line recalls the previous prompt, ↓ on its
// last line the next one (and at the end what was being typed). The extension keeps it (per
// workspace) and sends it with every snapshot; a send adds to it here too.

const MAX = 100;

export class PromptHistory {
	private items: string[] = [];
	private pos = 0;
	private draft = "";

	/** Replaces the history (a snapshot's), keeping the newest MAX, and goes back to the end. */
	set(items: string[]): void {
		this.items = items.slice(-MAX);
		this.pos = this.items.length;
		this.draft = "";
	}

	/** Adds a sent prompt as the newest (once: an earlier copy moves up). */
	remember(text: string): void {
		this.set([...this.items.filter((x) => x !== text), text]);
	}

	/** Moves through the history (-1 older, +1 newer) from the input's text; returns the text to
	 * show, or undefined at either end. Leaving the end keeps what was typed, to come back to. */
	recall(dir: -1 | 1, current: string): string | undefined {
		const next = this.pos + dir;
		if (next < 0 || next > this.items.length) return undefined;
		if (this.pos === this.items.length) this.draft = current;
		this.pos = next;
		return next === this.items.length ? this.draft : this.items[next];
	}
}
