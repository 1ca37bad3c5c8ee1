// Text from the model (its replies, commands, paths) and from MCP servers, made safe to show.
//
// Control characters (C0 but tab, line feed and carriage return, DEL, C1) and Unicode
// bidirectional controls: VS Code's views are HTML, which does not act on the first two (no
// cursor, no clipboard) but renders them as nothing, and obeys the last, which reorder what is
// shown (a command that reads differently from what runs). They are shown as `\x1b`, `\u202e`,
// as agentd's terminal output does.
const CONTROL = /[\u0000-\u0008\u000b\u000c\u000e-\u001f\u007f-\u009f\u061c\u200e\u200f\u202a-\u202e\u2066-\u2069]/g;

/** Text with its control and bidi characters made visible (see CONTROL). */
export function visible(s: string): string {
	return s.replace(CONTROL, (c) => {
		const n = c.charCodeAt(0);
		return n < 0x80 ? `\\x${n.toString(16).padStart(2, "0")}` : `\\u${n.toString(16).padStart(4, "0")}`;
	});
}
