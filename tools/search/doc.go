// Package search is the engine behind the grep, glob and ls tools: Grep (content search with
// two engines of identical semantics, ripgrep and pure Go), Glob (file names by glob pattern,
// newest first) and Tree (a capped directory tree). It is a pure library: no tool
// wrapper, no schema.
//
// # Paths
//
// Every call has an absolute Root (the workspace root) and optional sub-paths. Ignore files
// are read from Root downwards only — never from its parent directories, never git's global
// excludes (core.excludesFile). Results and glob matching use slash-separated Root-relative
// paths. Searching a sub-path gives exactly the subset of a search of Root: ripgrep is always
// run in Root on ".", restricted to the sub-paths with "!" globs for the entries beside them.
// A sub-path that is itself hidden (or ignored) is searched anyway: the search then includes
// hidden (ignored) files, and the result carries a note. Symbolic links are never followed,
// not even when named as the path (the error names the target instead); symlinked files are
// not searched or listed by Grep and Glob (ripgrep's default); Tree lists links as
// "name -> target". Only regular files are searched.
//
// # Which files are visited
//
// Both Grep engines, Glob and Tree use one decision procedure, ripgrep 13's (`rg
// --no-require-git --no-ignore-parent --no-ignore-global`), applied to every entry of the walk
// (a rejected directory is not descended into):
//
//  1. An entry named .git (directory or file) is never visited, with any option.
//  2. Globs (Grep's Include/Exclude, ripgrep -g syntax and semantics, matched against the
//     Root-relative path; the last matching glob wins): a matching including glob accepts the
//     entry — overriding ignore files and the hidden rule, exactly like rg -g —, a matching
//     "!" glob rejects it. When there is at least one including glob, a file that matches no
//     glob is rejected; a directory that matches none falls through.
//  3. Ignore files, unless NoIgnore: .rgignore, .ignore, .gitignore in every directory, and
//     .git/info/exclude of each repository (for a .git file, the commondir of its gitdir, as
//     ripgrep does). Per kind, the deepest directory with a matching rule decides (last
//     matching line wins within a file); kinds rank .rgignore > .ignore > .gitignore >
//     exclude. .gitignore and exclude rules of directories above the nearest repository root
//     (a directory containing .git) do not apply inside it. .gitignore files apply even
//     outside a git repository. A "!" rule that matches whitelists the entry, which then also
//     escapes the hidden rule (ripgrep's behaviour).
//  4. Hidden entries (names starting with ".") are rejected unless Hidden.
//
// Ignore-file lines are read like ripgrep reads them (comments, trailing whitespace, `\!` and
// `\#`, `!`, a leading `/` anchors, a trailing `/` matches directories only, no slash means
// "at any depth", `dir/**` is everything inside dir, `{a,b}` alternation — which git itself
// does not have —, `[!x]` and `[^x]` classes); each path component is matched by path.Match
// with every literal escaped, with `**` and anchoring handled around it. A line that does not
// compile is skipped; a file stops at its first line that is not valid UTF-8 (as in ripgrep).
//
// # Grep
//
// Patterns are Go RE2 syntax (regexp/syntax, Perl flags). The ripgrep engine does not receive
// the user's text: the parsed tree is serialized to Rust regex syntax with every class
// written out as explicit ranges, so both engines run the same regex. Consequences, in both
// engines: \d, \w, \s and \b are ASCII (Rust's would be Unicode); Unicode classes such as
// \pL use Go's tables; (?i) uses Unicode simple case folding (k matches U+212A); \Q…\E works.
// Rejected with InvalidArgs: syntax errors, patterns with a line break, a class that can only
// match '\n', Rust-only syntax that Go would read differently (nested classes like [a[b]],
// class set operations &&, --, ~~). (?x) and \< \> are syntax errors in Go and so rejected.
// Known residual difference: on invalid UTF-8, Go's `.` and negated classes match a single
// invalid byte, Rust's do not.
//
// Matching is line by line (as ripgrep without -U): a match never spans a line break; `^` and
// `$` (and \A, \z) are the start and end of a line. A line ends at '\n'; in a CRLF file the
// '\r' belongs to the line for matching (so `x$` does not match "x\r", as in ripgrep without
// --crlf) and is dropped from the shown text. Invalid UTF-8 is shown as U+FFFD. Lines longer
// than MaxColumns bytes are shown as a window around the first match with "…" and a
// "[+N bytes]" count.
//
// Binary files: a file that contains a NUL byte anywhere is skipped entirely (no matches, no
// count), in both engines. ripgrep stops reading a file at the first buffer that holds a NUL
// (matches in earlier buffers are already printed) and reports the NUL's offset in its "end"
// message; the ripgrep engine drops every file with such an offset. The Go engine reads the
// whole file and, when it finds a first match, checks the whole buffer for a NUL. No
// transcoding: UTF-16 files (full of NULs) are binary in both engines (rg runs with
// --encoding none).
//
// Case: IgnoreCase, or SmartCase with no uppercase letter outside escapes, prefixes (?i).
//
// Overlay: open documents in the search scope are never read from disk (rg gets a "!" glob for
// each, the Go walk skips them); each one whose path passes the filter is searched from its
// buffer by the Go matcher, in both engines, and marked Unsaved. A document that does not exist
// on disk yet is searched too (and may be named in Paths); one whose path is a symlink or
// directory on disk is not.
//
// Secrets: files that GrepOptions.Withhold names (the grep tool passes fsafe's sensitive-file
// rule) are not searched: the Go engine never reads them, the ripgrep engine drops their lines
// unread, and an open document among them is not searched either. The result counts every such
// file the search would have visited, whether or not it matches (so the count reveals nothing
// about their content), names the first few, and says how to see one (read it, or grep with its
// path: both ask the user).
//
// Results are sorted by path (byte order), then line. MaxResults caps matching lines (content
// mode) or files (files and count modes); totals and "N more" counts are exact. Context lines
// do not count. Per file, at most MaxResults matching lines are stored.
//
// Engines: EngineAuto runs `rg --json` (found on PATH, or RgPath) and falls back to the Go
// engine if it is missing or fails (the result carries a note). It also hands a search over to
// the Go engine when ripgrep's JSON output passes 25,000 lines: for very broad patterns
// (`\w+`, `err`), encoding and decoding every matching line as JSON costs several times what
// the Go engine needs. EngineRipgrep and EngineGo force one engine. ripgrep exit status 1
// means no match, 2 with a final summary means some files were unreadable (skipped, as the Go
// engine does), 2 otherwise is a failure. Cancelling ctx kills ripgrep / stops the walk and
// returns ctx.Err().
//
// # Glob
//
// Glob patterns are globs of the same dialect as Grep's Include/Exclude (ripgrep's globset:
// `*` and `?` within a component, `[...]` classes, `{a,b}` alternatives, not nested, `**` as a
// whole component), compiled by the same code, but matched against the whole path relative to
// Path: "*.go" lists the files directly in Path, "**/*.go" those at any depth. Glob lists regular
// files only, sorted by modification time, newest first, ties by path. Ignore files apply as above;
// hidden entries are skipped unless Hidden or the pattern names a dot component itself
// (".github/**", "**/.env*": then hidden entries are visited everywhere and the pattern
// decides). The walk starts at the pattern's literal directory prefix and, without `**`, does
// not descend deeper than the pattern can match.
//
// # Tree
//
// Tree lists a directory breadth first to Depth levels; directories first, then files, by
// name. Ignored entries and .git are left out; hidden entries are listed unless SkipHidden.
// MaxPerDir and MaxEntries cap the listing ("… N more (d dirs, f files)" per directory and a
// total); directories at the depth limit show their entry count.
package search
