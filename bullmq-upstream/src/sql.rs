//! Upstream's Postgres command and migration SQL.
//!
//! The package inlines every `.sql` file into `dist/cjs/postgres/sql-scripts.js`
//! as two object literals, `exports.SQL_COMMANDS = { "<file>.sql": "<sql>", … }`
//! and `exports.SQL_MIGRATIONS = { … }`, whose keys and values are
//! double-quoted string literals that are also valid JSON strings. The
//! migration ledger (version, name, minimum client version) is the array
//! `exports.MIGRATIONS = [ … ]` in `dist/cjs/postgres/migrations/index.js`.
//!
//! Both files are generated code with a regular shape; the parsers below
//! accept exactly that shape and report anything else as
//! [`UpstreamError::Layout`] instead of guessing.

use std::collections::{BTreeMap, HashSet};
use std::fs;
use std::path::Path;

use crate::error::{UpstreamError, io_error, layout_error};

/// One runtime SQL command.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SqlFile {
    /// The command name: upstream's file name without `.sql`, e.g. `add_job`.
    pub name: String,
    /// The SQL, verbatim.
    pub text: String,
}

/// One schema migration, with its ledger metadata.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct MigrationFile {
    /// Schema version this migration produces (1, 2, …).
    pub version: i32,
    /// Its name: upstream's file name without `.sql`, e.g. `0001_schema`.
    pub name: String,
    /// The oldest client major version that works with the resulting schema.
    pub min_client_version: i32,
    /// The SQL, verbatim.
    pub text: String,
}

/// The commands of `sql-scripts.js`, ordered by name.
///
/// # Errors
///
/// File-system errors, and [`UpstreamError::Layout`] when the file does not
/// have the expected shape.
pub fn load_commands(sql_scripts_js: &Path) -> Result<Vec<SqlFile>, UpstreamError> {
    let source = read(sql_scripts_js)?;
    let mut commands: Vec<SqlFile> = parse_string_object(&source, "exports.SQL_COMMANDS")
        .map_err(|msg| layout_error(sql_scripts_js, msg))?
        .into_iter()
        .map(|(key, text)| {
            let name = sql_stem(&key).map_err(|msg| layout_error(sql_scripts_js, msg))?;
            Ok(SqlFile { name, text })
        })
        .collect::<Result<_, UpstreamError>>()?;
    commands.sort_by(|a, b| a.name.cmp(&b.name));
    Ok(commands)
}

/// The migrations, ordered by version: the ledger of `migrations_index_js`
/// joined with the SQL of `sql_scripts_js`.
///
/// # Errors
///
/// File-system errors, and [`UpstreamError::Layout`] when a file does not have
/// the expected shape, a ledger entry has no SQL (or the reverse), or versions
/// repeat.
pub fn load_migrations(
    sql_scripts_js: &Path,
    migrations_index_js: &Path,
) -> Result<Vec<MigrationFile>, UpstreamError> {
    let source = read(sql_scripts_js)?;
    let mut sql: BTreeMap<String, String> = parse_string_object(&source, "exports.SQL_MIGRATIONS")
        .map_err(|msg| layout_error(sql_scripts_js, msg))?
        .into_iter()
        .collect();
    let ledger = parse_migration_ledger(&read(migrations_index_js)?)
        .map_err(|msg| layout_error(migrations_index_js, msg))?;

    let mut versions = HashSet::new();
    let mut migrations = Vec::with_capacity(ledger.len());
    for entry in ledger {
        let invalid = |msg: String| layout_error(migrations_index_js, msg);
        if !versions.insert(entry.version) {
            return Err(invalid(format!("version {} appears twice", entry.version)));
        }
        let name = sql_stem(&entry.file).map_err(invalid)?;
        if name != entry.name {
            return Err(invalid(format!(
                "migration `{}` loads `{}`, whose name differs",
                entry.name, entry.file
            )));
        }
        let text = sql.remove(&entry.file).ok_or_else(|| {
            layout_error(
                sql_scripts_js,
                format!("no SQL_MIGRATIONS entry `{}`", entry.file),
            )
        })?;
        migrations.push(MigrationFile {
            version: entry.version,
            name,
            min_client_version: entry.min_client_version,
            text,
        });
    }
    if let Some(orphan) = sql.keys().next() {
        return Err(layout_error(
            sql_scripts_js,
            format!("SQL_MIGRATIONS entry `{orphan}` is not listed in migrations/index.js"),
        ));
    }
    migrations.sort_by_key(|m| m.version);
    Ok(migrations)
}

fn read(path: &Path) -> Result<String, UpstreamError> {
    fs::read_to_string(path).map_err(|e| io_error("read", path, e))
}

/// `add_job.sql` → `add_job`.
pub(crate) fn sql_stem(key: &str) -> Result<String, String> {
    key.strip_suffix(".sql")
        .filter(|stem| {
            !stem.is_empty() && stem.bytes().all(|b| b.is_ascii_alphanumeric() || b == b'_')
        })
        .map(str::to_owned)
        .ok_or_else(|| format!("`{key}` is not a `<snake_case_name>.sql` file name"))
}

/// Parses `<binding> = { "k": "v", … };`, where every key and value is a
/// JSON-compatible double-quoted string. Entries keep their source order.
fn parse_string_object(source: &str, binding: &str) -> Result<Vec<(String, String)>, String> {
    let head = format!("{binding} = {{");
    let mut found = source.match_indices(&head);
    let (start, _) = found.next().ok_or_else(|| format!("`{head}` not found"))?;
    if found.next().is_some() {
        return Err(format!("`{head}` appears more than once"));
    }
    let mut cursor = Cursor {
        s: source,
        pos: start + head.len(),
    };
    let mut entries = Vec::new();
    let mut keys = HashSet::new();
    loop {
        cursor.skip_blanks_and_comments()?;
        if cursor.eat('}') {
            break;
        }
        let key = cursor.json_string()?;
        cursor.skip_blanks_and_comments()?;
        if !cursor.eat(':') {
            return Err(format!("expected `:` after key `{key}`"));
        }
        cursor.skip_blanks_and_comments()?;
        let value = cursor.json_string()?;
        if !keys.insert(key.clone()) {
            return Err(format!("key `{key}` appears twice in {binding}"));
        }
        entries.push((key, value));
        cursor.skip_blanks_and_comments()?;
        if cursor.eat('}') {
            break;
        }
        if !cursor.eat(',') {
            return Err(format!(
                "expected `,` or `}}` after entry {}",
                entries.len()
            ));
        }
    }
    Ok(entries)
}

/// A position in JavaScript source.
struct Cursor<'a> {
    s: &'a str,
    pos: usize,
}

impl<'a> Cursor<'a> {
    fn rest(&self) -> &'a str {
        &self.s[self.pos..]
    }

    fn eat(&mut self, c: char) -> bool {
        let matched = self.rest().starts_with(c);
        if matched {
            self.pos += c.len_utf8();
        }
        matched
    }

    fn skip_blanks_and_comments(&mut self) -> Result<(), String> {
        loop {
            let trimmed = self.rest().trim_start();
            self.pos = self.s.len() - trimmed.len();
            if trimmed.starts_with("//") {
                self.pos += trimmed.find('\n').unwrap_or(trimmed.len());
            } else if trimmed.starts_with("/*") {
                let end = trimmed.find("*/").ok_or("unterminated block comment")?;
                self.pos += end + 2;
            } else {
                return Ok(());
            }
        }
    }

    /// A double-quoted string literal, decoded as JSON.
    fn json_string(&mut self) -> Result<String, String> {
        let rest = self.rest();
        if !rest.starts_with('"') {
            let preview: String = rest.chars().take(20).collect();
            return Err(format!("expected a double-quoted string at `{preview}`"));
        }
        let mut escaped = false;
        let mut end = None;
        for (i, c) in rest.char_indices().skip(1) {
            match c {
                _ if escaped => escaped = false,
                '\\' => escaped = true,
                '"' => {
                    end = Some(i);
                    break;
                }
                '\n' | '\r' => return Err("line break inside a string literal".to_owned()),
                _ => {}
            }
        }
        let end = end.ok_or("unterminated string literal")?;
        let literal = &rest[..=end];
        let value = serde_json::from_str(literal).map_err(|e| {
            format!("string literal is not JSON-compatible ({e}); the parser needs updating")
        })?;
        self.pos += end + 1;
        Ok(value)
    }
}

/// One element of `exports.MIGRATIONS`.
#[derive(Debug, PartialEq, Eq)]
struct LedgerEntry {
    version: i32,
    name: String,
    min_client_version: i32,
    /// The file given to `loadMigrationSql(…)`.
    file: String,
}

/// Parses the `exports.MIGRATIONS = [ { … }, … ];` array, one property per line.
fn parse_migration_ledger(source: &str) -> Result<Vec<LedgerEntry>, String> {
    const HEAD: &str = "exports.MIGRATIONS = [";
    let start = source
        .find(HEAD)
        .ok_or_else(|| format!("`{HEAD}` not found"))?;
    let body = &source[start + HEAD.len()..];

    #[derive(Default)]
    struct Partial {
        version: Option<i32>,
        name: Option<String>,
        min_client_version: Option<i32>,
        file: Option<String>,
    }

    let mut entries = Vec::new();
    let mut current: Option<Partial> = None;
    for (n, raw) in body.lines().enumerate() {
        let line = raw.trim();
        let at = |msg: &str| format!("{msg} (line {} after `{HEAD}`)", n + 1);
        if line.is_empty() || line.starts_with("//") {
            continue;
        }
        if line == "];" {
            if current.is_some() {
                return Err(at("array ends inside an entry"));
            }
            return Ok(entries);
        }
        let Some(partial) = current.as_mut() else {
            if line == "{" {
                current = Some(Partial::default());
                continue;
            }
            return Err(at(&format!("expected `{{`, found `{line}`")));
        };
        if line == "}," || line == "}" {
            let Some(done) = current.take() else { continue };
            let missing = |field: &str| at(&format!("entry has no `{field}`"));
            entries.push(LedgerEntry {
                version: done.version.ok_or_else(|| missing("version"))?,
                name: done.name.ok_or_else(|| missing("name"))?,
                min_client_version: done
                    .min_client_version
                    .ok_or_else(|| missing("minClientVersion"))?,
                file: done.file.ok_or_else(|| missing("load"))?,
            });
            continue;
        }
        let (key, value) = line
            .split_once(':')
            .ok_or_else(|| at(&format!("unexpected line `{line}`")))?;
        let value = value.trim().strip_suffix(',').unwrap_or(value.trim());
        match key.trim() {
            "version" => partial.version = Some(parse_int(value).map_err(|e| at(&e))?),
            "minClientVersion" => {
                partial.min_client_version = Some(parse_int(value).map_err(|e| at(&e))?);
            }
            "name" => partial.name = Some(parse_quoted(value).map_err(|e| at(&e))?),
            "load" => {
                let call = value
                    .split_once("loadMigrationSql)(")
                    .or_else(|| value.split_once("loadMigrationSql("))
                    .ok_or_else(|| at("`load` does not call loadMigrationSql"))?
                    .1;
                let arg = call
                    .strip_suffix(')')
                    .ok_or_else(|| at("unexpected `load` call shape"))?;
                partial.file = Some(parse_quoted(arg).map_err(|e| at(&e))?);
            }
            other => return Err(at(&format!("unknown migration field `{other}`"))),
        }
    }
    Err(format!("`{HEAD}` is not closed by `];`"))
}

fn parse_int(value: &str) -> Result<i32, String> {
    value
        .parse()
        .map_err(|_| format!("`{value}` is not an integer"))
}

/// A single- or double-quoted JavaScript string without escapes.
fn parse_quoted(value: &str) -> Result<String, String> {
    let inner = value
        .strip_prefix('\'')
        .and_then(|v| v.strip_suffix('\''))
        .or_else(|| value.strip_prefix('"').and_then(|v| v.strip_suffix('"')))
        .ok_or_else(|| format!("`{value}` is not a quoted string"))?;
    if inner.contains(['\\', '\'', '"']) {
        return Err(format!("`{value}` has escapes or quotes inside"));
    }
    Ok(inner.to_owned())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn string_objects_are_parsed_in_order() {
        let js = "x;\nexports.A = {\n    \"b.sql\": \"one\\n\\\"two\\\"\\u00e9\",\n    // note\n    \"a.sql\": \"\",\n};\n";
        let parsed = parse_string_object(js, "exports.A").expect("parses");
        assert_eq!(
            parsed,
            vec![
                ("b.sql".to_owned(), "one\n\"two\"\u{e9}".to_owned()),
                ("a.sql".to_owned(), String::new()),
            ]
        );
    }

    #[test]
    fn non_json_literals_are_rejected() {
        let js = "exports.A = { \"a.sql\": \"\\x41\" };";
        assert!(parse_string_object(js, "exports.A").is_err());
        let js = "exports.A = { 'a.sql': \"x\" };";
        assert!(parse_string_object(js, "exports.A").is_err());
    }

    #[test]
    fn the_ledger_is_parsed() {
        let js = "exports.MIGRATIONS = [\n    {\n        version: 2,\n        name: '0002_b',\n        // why\n        minClientVersion: 6,\n        load: () => (0, sql_loader_1.loadMigrationSql)('0002_b.sql'),\n    },\n];\n";
        let parsed = parse_migration_ledger(js).expect("parses");
        assert_eq!(
            parsed,
            vec![LedgerEntry {
                version: 2,
                name: "0002_b".to_owned(),
                min_client_version: 6,
                file: "0002_b.sql".to_owned(),
            }]
        );
    }

    #[test]
    fn unknown_ledger_fields_are_rejected() {
        let js = "exports.MIGRATIONS = [\n    {\n        version: 2,\n        maxClientVersion: 7,\n    },\n];\n";
        assert!(parse_migration_ledger(js).is_err());
    }
}
