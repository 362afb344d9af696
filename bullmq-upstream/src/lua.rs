//! Upstream's Lua scripts, with their `--- @include` directives resolved.
//!
//! The resolution reproduces, step for step, what upstream's script loader
//! does when it generates the scripts it ships, so that the resolved text (and
//! therefore the SHA-1 Redis caches it under) is byte-identical:
//!
//! 1. **Tokenize.** In each file, find the first include directive (the regular
//!    expression `^[-]{2,3}[ \t]*@include[ \t]+(["'])(.+?)\1[; \t\n]*$`, multiline,
//!    JavaScript semantics), resolve its path against the directory of the file
//!    containing it (appending `.lua` when it has no extension), and replace the
//!    first occurrence of the matched text with a token `@@<sha1 of the path>`.
//!    Repeat until no directive is left. Each included file is read once and
//!    tokenized the same way, recursively. Including one file twice from the
//!    same file, a missing file and a cycle are errors.
//! 2. **Interpolate** depth first, with one set of already emitted files per
//!    top-level script: the first token of a file not emitted yet is replaced by
//!    that file's interpolated text, every other token of it is deleted. Each
//!    include therefore appears once, where it is first used.
//! 3. **Remove empty lines** as `text.replace(/^\s*[\r\n]/gm, '')` does: from
//!    the start of a line, the run of whitespace (which may span several lines)
//!    is deleted up to and including its last line break. A run of blank or
//!    whitespace-only lines thus vanishes at once, while the indentation of the
//!    next non-blank line stays.
//!
//! The JavaScript regular expression and `String.prototype.replace` semantics
//! (line terminators, `\s`, `$` patterns in replacement strings) are emulated by
//! hand rather than through a regex engine, because the exact JavaScript
//! behaviour is what matters here.

use std::collections::{HashMap, HashSet};
use std::fs;
use std::io;
use std::path::{Component, Path, PathBuf};

use sha1::{Digest, Sha1};

use crate::error::{IncludeError, UpstreamError, io_error, layout_error};

/// One top-level upstream Lua script, with its includes resolved.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct LuaScript {
    /// The command name, e.g. `moveToFinished` (the file name before the `-`).
    pub name: String,
    /// How many of the script's arguments are `KEYS` (the number after the `-`).
    pub num_keys: usize,
    /// The resolved text, exactly as upstream sends it to Redis.
    pub text: String,
    /// SHA-1 of `text`, lowercase hex: the name Redis caches the script under.
    pub sha1_hex: String,
}

impl LuaScript {
    /// The upstream file name, `<name>-<num_keys>.lua`.
    #[must_use]
    pub fn file_name(&self) -> String {
        format!("{}-{}.lua", self.name, self.num_keys)
    }
}

/// Resolves every top-level script (`*.lua` directly in `commands_dir`),
/// ordered by file name.
///
/// # Errors
///
/// File-system errors, a top-level file name not of the form
/// `<name>-<keys>.lua`, and every [`IncludeError`].
pub fn load_scripts(commands_dir: &Path) -> Result<Vec<LuaScript>, UpstreamError> {
    let commands_dir = std::path::absolute(commands_dir)
        .map_err(|e| io_error("resolve the path", commands_dir, e))?;
    let commands_dir = normalize(&commands_dir);
    let entries = fs::read_dir(&commands_dir).map_err(|e| io_error("list", &commands_dir, e))?;
    let mut files = Vec::new();
    for entry in entries {
        let entry = entry.map_err(|e| io_error("list", &commands_dir, e))?;
        let path = entry.path();
        if path.extension().is_some_and(|ext| ext == "lua") && path.is_file() {
            files.push(path);
        }
    }
    files.sort();
    if files.is_empty() {
        return Err(layout_error(&commands_dir, "no .lua files found"));
    }

    // One resolver for all scripts: includes are read and tokenized once,
    // exactly as upstream shares its cache across a directory.
    let mut resolver = Resolver::new(read_file);
    files
        .iter()
        .map(|path| {
            let (name, num_keys) = split_file_name(path)?;
            let text = resolver.resolve_top_level(path)?;
            let sha1_hex = sha1_hex(&text);
            Ok(LuaScript {
                name,
                num_keys,
                text,
                sha1_hex,
            })
        })
        .collect()
}

/// Resolves the includes of one Lua file and returns its final text.
///
/// # Errors
///
/// File-system errors and every [`IncludeError`].
pub fn resolve_file(path: &Path) -> Result<String, UpstreamError> {
    let path = std::path::absolute(path).map_err(|e| io_error("resolve the path", path, e))?;
    Resolver::new(read_file).resolve_top_level(&normalize(&path))
}

/// SHA-1 of a text, lowercase hex.
pub(crate) fn sha1_hex(text: &str) -> String {
    hex::encode(Sha1::digest(text.as_bytes()))
}

/// Reads a file; `Ok(None)` when it does not exist.
fn read_file(path: &Path) -> io::Result<Option<String>> {
    match fs::read(path) {
        // Node's `Buffer#toString()` decodes UTF-8 the same lossy way.
        Ok(bytes) => Ok(Some(String::from_utf8_lossy(&bytes).into_owned())),
        Err(err) if err.kind() == io::ErrorKind::NotFound => Ok(None),
        Err(err) => Err(err),
    }
}

/// `moveToFinished-14.lua` → (`moveToFinished`, 14).
pub(crate) fn split_file_name(path: &Path) -> Result<(String, usize), UpstreamError> {
    let stem = path
        .file_stem()
        .and_then(|s| s.to_str())
        .unwrap_or_default();
    let parsed = stem.split_once('-').and_then(|(name, keys)| {
        let name_ok = name.chars().next().is_some_and(|c| c.is_ascii_alphabetic())
            && name.chars().all(|c| c.is_ascii_alphanumeric());
        let keys_ok = !keys.is_empty() && keys.bytes().all(|b| b.is_ascii_digit());
        if name_ok && keys_ok {
            keys.parse().ok().map(|n| (name.to_owned(), n))
        } else {
            None
        }
    });
    parsed.ok_or_else(|| {
        layout_error(
            path,
            "a top-level script name must look like `<camelCaseName>-<numberOfKeys>.lua`",
        )
    })
}

/// One file met while resolving: a top-level script or an include.
#[derive(Debug)]
struct Node {
    /// Absolute, normalized path.
    path: PathBuf,
    /// `@@` + SHA-1 of `path`: what replaces a directive including this file.
    token: String,
    /// The content, with its directives replaced by tokens once resolved.
    content: String,
    /// The files it includes, in directive order (indices into `Resolver::nodes`).
    includes: Vec<usize>,
}

/// The include resolver; `R` reads a file (`Ok(None)` = no such file).
struct Resolver<R> {
    read: R,
    nodes: Vec<Node>,
    /// Includes already read, by path.
    by_path: HashMap<PathBuf, usize>,
}

impl<R> Resolver<R>
where
    R: FnMut(&Path) -> io::Result<Option<String>>,
{
    fn new(read: R) -> Self {
        Self {
            read,
            nodes: Vec::new(),
            by_path: HashMap::new(),
        }
    }

    /// Resolves a top-level script given by absolute, normalized path.
    fn resolve_top_level(&mut self, path: &Path) -> Result<String, UpstreamError> {
        let content = (self.read)(path)
            .map_err(|e| io_error("read", path, e))?
            .ok_or_else(|| io_error("read", path, io::Error::from(io::ErrorKind::NotFound)))?;
        // Top-level scripts are not cached by path (upstream keys them by name),
        // so a script that is also included elsewhere gets a separate node.
        let index = self.push_node(path.to_path_buf(), content);
        self.tokenize(index, &mut Vec::new())?;
        let text = self.interpolate(index, &mut HashSet::new());
        Ok(remove_empty_lines(&text))
    }

    fn push_node(&mut self, path: PathBuf, content: String) -> usize {
        let token = format!("@@{}", sha1_hex(&path.to_string_lossy()));
        self.nodes.push(Node {
            path,
            token,
            content,
            includes: Vec::new(),
        });
        self.nodes.len() - 1
    }

    /// Step 1: replaces the directives of node `index` by tokens, recursively.
    fn tokenize(&mut self, index: usize, stack: &mut Vec<PathBuf>) -> Result<(), UpstreamError> {
        let path = self.nodes[index].path.clone();
        if stack.contains(&path) {
            return Err(IncludeError::Cycle {
                path,
                chain: stack.clone(),
            }
            .into());
        }
        stack.push(path.clone());
        let dir = path.parent().map(Path::to_path_buf).unwrap_or_default();

        let mut content = self.nodes[index].content.clone();
        while let Some(found) = find_include(&content) {
            let directive = content[found.start..found.end].to_owned();
            let reference = &content[found.reference.clone()];
            let unsupported = |feature| {
                UpstreamError::from(IncludeError::Unsupported {
                    file: path.clone(),
                    directive: directive.trim_end().to_owned(),
                    feature,
                })
            };
            if reference.starts_with('~') || reference.starts_with('<') {
                return Err(unsupported("a mapped path (`~` or `<name>`)"));
            }
            if has_glob_magic(reference) {
                return Err(unsupported("a glob pattern"));
            }
            let include_path = normalize(&dir.join(ensure_lua_ext(reference)));

            let duplicate = self.nodes[index]
                .includes
                .iter()
                .any(|&child| self.nodes[child].path == include_path);
            if duplicate {
                return Err(IncludeError::Duplicate {
                    file: path,
                    directive: directive.trim_end().to_owned(),
                }
                .into());
            }

            let child = match self.by_path.get(&include_path) {
                Some(&child) => child,
                None => {
                    let not_found = || IncludeError::NotFound {
                        file: path.clone(),
                        directive: directive.trim_end().to_owned(),
                        resolved: include_path.clone(),
                    };
                    // Upstream keeps only `.lua` files among the include candidates.
                    if extname(&include_path.to_string_lossy()) != ".lua" {
                        return Err(not_found().into());
                    }
                    let child_content = (self.read)(&include_path)
                        .map_err(|e| io_error("read", &include_path, e))?
                        .ok_or_else(not_found)?;
                    let child = self.push_node(include_path.clone(), child_content);
                    self.by_path.insert(include_path, child);
                    child
                }
            };
            self.nodes[index].includes.push(child);
            self.tokenize(child, stack)?;

            let token = self.nodes[child].token.clone();
            content = js_replace_first(&content, &directive, &token);
        }
        self.nodes[index].content = content;
        stack.pop();
        Ok(())
    }

    /// Step 2: the text of node `index` with its includes interpolated.
    fn interpolate(&self, index: usize, processed: &mut HashSet<usize>) -> String {
        let node = &self.nodes[index];
        let mut content = node.content.clone();
        for &child in &node.includes {
            let emitted = processed.contains(&child);
            // Like upstream, interpolate the child even when it was emitted
            // already; this only marks its own includes as processed.
            let fragment = self.interpolate(child, processed);
            let token = &self.nodes[child].token;
            if emitted || fragment.is_empty() {
                content = content.replace(token.as_str(), "");
            } else {
                content = js_replace_first(&content, token, &fragment);
                content = content.replace(token.as_str(), "");
            }
            processed.insert(child);
        }
        content
    }
}

/// Where an include directive was found.
#[derive(Debug, PartialEq, Eq)]
struct IncludeMatch {
    /// Byte range of the whole match.
    start: usize,
    end: usize,
    /// Byte range of the quoted reference.
    reference: std::ops::Range<usize>,
}

/// JavaScript's line terminators (what `^`, `$` and `.` care about).
fn is_line_terminator(c: char) -> bool {
    matches!(c, '\n' | '\r' | '\u{2028}' | '\u{2029}')
}

/// JavaScript's `\s`.
fn is_js_space(c: char) -> bool {
    matches!(
        c,
        '\t' | '\n' | '\u{0B}' | '\u{0C}' | '\r' | ' ' | '\u{A0}' | '\u{1680}' | '\u{2000}'
            ..='\u{200A}'
                | '\u{2028}'
                | '\u{2029}'
                | '\u{202F}'
                | '\u{205F}'
                | '\u{3000}'
                | '\u{FEFF}'
    )
}

/// Byte offsets where a multiline `^` holds: 0 and after every line terminator.
fn line_starts(s: &str) -> impl Iterator<Item = usize> + '_ {
    std::iter::once(0).chain(
        s.char_indices()
            .filter(|&(_, c)| is_line_terminator(c))
            .map(|(i, c)| i + c.len_utf8()),
    )
}

/// The first match of `/^[-]{2,3}[ \t]*@include[ \t]+(["'])(.+?)\1[; \t\n]*$/m`,
/// as `RegExp.prototype.exec` would find it.
fn find_include(s: &str) -> Option<IncludeMatch> {
    line_starts(s).find_map(|start| match_include_at(s, start))
}

/// The include regex anchored at `start` (which must be a line start).
fn match_include_at(s: &str, start: usize) -> Option<IncludeMatch> {
    let bytes = s.as_bytes();
    let count = |from: usize, pred: &dyn Fn(u8) -> bool| {
        bytes[from..].iter().take_while(|&&b| pred(b)).count()
    };

    // `[-]{2,3}`: with four or more dashes neither two nor three can be
    // followed by `[ \t]*@`, so only runs of exactly two or three match.
    let dashes = count(start, &|b| b == b'-');
    if !(2..=3).contains(&dashes) {
        return None;
    }
    let mut pos = start + dashes;
    // `[ \t]*@include[ \t]+`: greedy runs that cannot give anything back,
    // since what follows each is neither a space nor a tab.
    pos += count(pos, &|b| b == b' ' || b == b'\t');
    if !bytes[pos..].starts_with(b"@include") {
        return None;
    }
    pos += "@include".len();
    let blanks = count(pos, &|b| b == b' ' || b == b'\t');
    if blanks == 0 {
        return None;
    }
    pos += blanks;
    // `(["'])`
    let quote = match bytes.get(pos) {
        Some(&q @ (b'"' | b'\'')) => char::from(q),
        _ => return None,
    };
    let reference_start = pos + 1;
    // `(.+?)\1[; \t\n]*$`: lazily grow the reference one character at a
    // time; after each, try the closing quote and the tail.
    let mut end = reference_start;
    loop {
        if end > reference_start
            && s[end..].starts_with(quote)
            && let Some(match_end) = match_tail(s, end + 1)
        {
            return Some(IncludeMatch {
                start,
                end: match_end,
                reference: reference_start..end,
            });
        }
        let c = s[end..].chars().next()?;
        if is_line_terminator(c) {
            return None;
        }
        end += c.len_utf8();
    }
}

/// `[; \t\n]*$` at `from`: the greedy run, backtracking until `$` holds.
fn match_tail(s: &str, from: usize) -> Option<usize> {
    let run = s.as_bytes()[from..]
        .iter()
        .take_while(|&&b| matches!(b, b';' | b' ' | b'\t' | b'\n'))
        .count();
    (0..=run)
        .rev()
        .map(|taken| from + taken)
        .find(|&pos| s[pos..].chars().next().is_none_or(is_line_terminator))
}

/// `s.replace(/^\s*[\r\n]/gm, '')` with JavaScript semantics.
///
/// At each line start, `\s*` takes the whole run of whitespace (which may span
/// several lines) and backtracks to its last `\r` or `\n`; that prefix goes.
/// The search then continues right after the removed text.
pub(crate) fn remove_empty_lines(s: &str) -> String {
    let mut out = String::with_capacity(s.len());
    let mut copied = 0; // bytes of `s` already handled
    let mut at_line_start = true;
    let mut iter = s.char_indices().peekable();
    while let Some(&(i, c)) = iter.peek() {
        if at_line_start {
            let run_end = s[i..]
                .char_indices()
                .find(|&(_, c)| !is_js_space(c))
                .map_or(s.len(), |(j, _)| i + j);
            let last_break = s[i..run_end].rfind(['\r', '\n']).map(|j| i + j + 1);
            if let Some(match_end) = last_break {
                out.push_str(&s[copied..i]);
                copied = match_end;
                // Resume after the match, which ends just after a line break.
                while iter.peek().is_some_and(|&(j, _)| j < match_end) {
                    iter.next();
                }
                at_line_start = true;
                continue;
            }
        }
        at_line_start = is_line_terminator(c);
        iter.next();
    }
    out.push_str(&s[copied..]);
    out
}

/// `haystack.replace(pattern, replacement)` for a string `pattern`: only the
/// first occurrence is replaced, and `$$`, `$&`, `` $` `` and `$'` in
/// `replacement` are expanded the way JavaScript does.
pub(crate) fn js_replace_first(haystack: &str, pattern: &str, replacement: &str) -> String {
    let Some(pos) = haystack.find(pattern) else {
        return haystack.to_owned();
    };
    let before = &haystack[..pos];
    let after = &haystack[pos + pattern.len()..];
    let mut out = String::with_capacity(haystack.len() + replacement.len());
    out.push_str(before);
    let mut chars = replacement.chars().peekable();
    while let Some(c) = chars.next() {
        if c != '$' {
            out.push(c);
            continue;
        }
        match chars.peek() {
            Some('$') => out.push('$'),
            Some('&') => out.push_str(pattern),
            Some('`') => out.push_str(before),
            Some('\'') => out.push_str(after),
            // Anything else (including `$1` or `$<`, as there are no groups)
            // stays literal.
            _ => {
                out.push('$');
                continue;
            }
        }
        chars.next();
    }
    out.push_str(after);
    out
}

/// Node's `path.extname` on a `/`-separated path.
fn extname(path: &str) -> &str {
    let base = path
        .rsplit(['/', std::path::MAIN_SEPARATOR])
        .next()
        .unwrap_or(path);
    match base.rfind('.') {
        Some(0) | None => "",
        Some(_) if base == ".." => "",
        Some(i) => &base[i..],
    }
}

/// Upstream's `ensureExt(reference, 'lua')`.
fn ensure_lua_ext(reference: &str) -> String {
    let ext = extname(reference);
    if ext.is_empty() || ext == "." {
        format!("{reference}.lua")
    } else {
        reference.to_owned()
    }
}

/// Whether a reference would be treated as a glob pattern by upstream.
fn has_glob_magic(reference: &str) -> bool {
    reference.contains(['*', '?', '[', '{'])
        || ["+(", "@(", "!("].iter().any(|p| reference.contains(p))
}

/// Lexical normalization, like Node's `path.resolve` (no symlinks followed).
fn normalize(path: &Path) -> PathBuf {
    let mut out = PathBuf::new();
    for component in path.components() {
        match component {
            Component::CurDir => {}
            Component::ParentDir => {
                out.pop();
            }
            other => out.push(other),
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Resolves `top` against in-memory files (paths are absolute, `/`-separated).
    fn resolve(files: &[(&str, &str)], top: &str) -> Result<String, UpstreamError> {
        let map: HashMap<PathBuf, String> = files
            .iter()
            .map(|(p, c)| (PathBuf::from(p), (*c).to_owned()))
            .collect();
        let mut resolver = Resolver::new(|p: &Path| Ok(map.get(p).cloned()));
        resolver.resolve_top_level(Path::new(top))
    }

    #[test]
    fn nested_includes_are_inlined_depth_first() {
        let files = [
            (
                "/c/top-1.lua",
                "-- top\n--- @include \"includes/a\"\nreturn a()\n",
            ),
            (
                "/c/includes/a.lua",
                "--- @include \"b\"\nlocal function a() return b() end\n",
            ),
            ("/c/includes/b.lua", "local function b() return 1 end\n"),
        ];
        assert_eq!(
            resolve(&files, "/c/top-1.lua").expect("resolves"),
            "-- top\nlocal function b() return 1 end\nlocal function a() return b() end\nreturn a()\n"
        );
    }

    #[test]
    fn an_include_used_twice_is_emitted_once_at_its_first_use() {
        let files = [
            (
                "/c/top-2.lua",
                "--- @include \"includes/x\"\n--- @include \"includes/y\"\nreturn y()\n",
            ),
            ("/c/includes/x.lua", "--- @include \"shared\"\nX = 1\n"),
            ("/c/includes/y.lua", "--- @include \"shared\"\nY = 2\n"),
            ("/c/includes/shared.lua", "S = 0\n"),
        ];
        assert_eq!(
            resolve(&files, "/c/top-2.lua").expect("resolves"),
            "S = 0\nX = 1\nY = 2\nreturn y()\n"
        );
    }

    #[test]
    fn including_the_same_file_twice_in_one_file_is_an_error() {
        let files = [
            (
                "/c/top-1.lua",
                "--- @include \"includes/a\"\n--- @include 'includes/a.lua'\n",
            ),
            ("/c/includes/a.lua", "A = 1\n"),
        ];
        let err = resolve(&files, "/c/top-1.lua").expect_err("duplicate");
        assert!(
            matches!(err, UpstreamError::Include(IncludeError::Duplicate { .. })),
            "{err}"
        );
    }

    #[test]
    fn a_missing_include_is_an_error_naming_the_resolved_path() {
        let files = [("/c/top-1.lua", "--- @include \"includes/nope\"\n")];
        let err = resolve(&files, "/c/top-1.lua").expect_err("missing");
        match err {
            UpstreamError::Include(IncludeError::NotFound { resolved, .. }) => {
                assert_eq!(resolved, Path::new("/c/includes/nope.lua"));
            }
            other => panic!("unexpected error: {other}"),
        }
    }

    #[test]
    fn a_cycle_is_an_error() {
        let files = [
            ("/c/top-1.lua", "--- @include \"includes/a\"\n"),
            ("/c/includes/a.lua", "--- @include \"b\"\n"),
            ("/c/includes/b.lua", "--- @include \"a\"\n"),
        ];
        let err = resolve(&files, "/c/top-1.lua").expect_err("cycle");
        match err {
            UpstreamError::Include(IncludeError::Cycle { path, chain }) => {
                assert_eq!(path, Path::new("/c/includes/a.lua"));
                assert_eq!(chain.len(), 3);
            }
            other => panic!("unexpected error: {other}"),
        }
    }

    #[test]
    fn paths_are_relative_to_the_including_file_and_normalized() {
        let files = [
            ("/c/top-1.lua", "--- @include \"includes/sub/a\"\n"),
            ("/c/includes/sub/a.lua", "--- @include \"../b\"\nA\n"),
            ("/c/includes/b.lua", "B\n"),
        ];
        assert_eq!(resolve(&files, "/c/top-1.lua").expect("resolves"), "B\nA\n");
    }

    #[test]
    fn blank_line_removal_matches_javascript() {
        for (text, expected) in [
            // Consecutive blank and whitespace-only lines vanish together.
            ("a\n\n  \n\t\nb\n", "a\nb\n"),
            // Leading blank lines go; indentation of a non-blank line stays.
            ("\n\n  x\n", "  x\n"),
            // Trailing whitespace of a non-blank line is not a blank line.
            ("x  \n\ny", "x  \ny"),
            // A final whitespace-only line without a line break is kept.
            ("x\n  ", "x\n  "),
            // `\r` is a line terminator for `^`, so CRLF pairs split.
            ("a\r\nb\r\n\r\nc", "a\rb\rc"),
            // Non-ASCII whitespace counts as `\s`.
            ("a\n\u{A0}\u{FEFF}\nb", "a\nb"),
        ] {
            assert_eq!(remove_empty_lines(text), expected, "{text:?}");
        }
    }

    #[test]
    fn the_directive_swallows_one_line_break_only_before_a_blank_line() {
        // `[; \t\n]*$` backtracks until `$` holds: before `local` it gives the
        // line break back, before an empty line it keeps one.
        let s = "--- @include \"a\"\nlocal x";
        assert_eq!(find_include(s).map(|m| m.end), Some(16));
        let s = "--- @include \"a\";  \n\nlocal x";
        assert_eq!(find_include(s).map(|m| m.end), Some(20));
    }

    #[test]
    fn directive_syntax_matches_the_upstream_regex() {
        let reference = |s: &str| find_include(s).map(|m| s[m.reference].to_owned());
        for (line, expected) in [
            ("-- @include 'x'", Some("x")),
            ("---\t@include\t\"x\" ;", Some("x")),
            ("---@include \"x\"", Some("x")),
            ("---- @include \"x\"", None),
            ("- @include \"x\"", None),
            ("--- @include\"x\"", None),
            ("--- @include \"x'", None),
            ("--- @include \"\"", None),
            ("  --- @include \"x\"", None),
            ("--- @include \"x\" -- why", None),
            // The lazy group grows past an inner quote until the tail matches.
            ("--- @include \"a\" \"b\"", Some("a\" \"b")),
            // Found on a later line, after a `\r` line terminator too.
            ("x\r--- @include \"y\"\n", Some("y")),
        ] {
            assert_eq!(reference(line).as_deref(), expected, "{line:?}");
        }
    }

    #[test]
    fn replacement_patterns_are_expanded_like_javascript() {
        assert_eq!(
            js_replace_first("a-T-b-T", "T", "[$&|$`|$'|$$|$1|$]"),
            "a-[T|a-|-b-T|$|$1|$]-b-T"
        );
        assert_eq!(js_replace_first("abc", "x", "y"), "abc");
    }

    #[test]
    fn extensions_follow_node() {
        for (path, expected) in [
            ("includes/x", "includes/x.lua"),
            ("x.lua", "x.lua"),
            ("x.", "x..lua"),
            (".hidden", ".hidden.lua"),
            ("x.txt", "x.txt"),
        ] {
            assert_eq!(ensure_lua_ext(path), expected);
        }
    }

    #[test]
    fn a_non_lua_include_is_not_found() {
        let files = [
            ("/c/top-1.lua", "--- @include \"x.txt\"\n"),
            ("/c/x.txt", "X\n"),
        ];
        let err = resolve(&files, "/c/top-1.lua").expect_err("not lua");
        assert!(
            matches!(err, UpstreamError::Include(IncludeError::NotFound { .. })),
            "{err}"
        );
    }

    #[test]
    fn top_level_names_are_split_on_the_dash() {
        let split = |s: &str| split_file_name(Path::new(s)).ok();
        assert_eq!(
            split("/c/moveToFinished-14.lua"),
            Some(("moveToFinished".into(), 14))
        );
        assert_eq!(split("/c/getStateV2-8.lua"), Some(("getStateV2".into(), 8)));
        assert_eq!(split("/c/noKeys.lua"), None);
        assert_eq!(split("/c/a-b.lua"), None);
    }
}
