//! The embedded Lua scripts are byte-identical to the resolved scripts the
//! pinned npm package ships in `dist/cjs/scripts/<name>-<keys>.js`.
//!
//! Those `.js` files hold upstream's own include resolution, so comparing with
//! them checks our resolver (which works from `dist/cjs/commands`) end to end.

use std::collections::BTreeMap;
use std::fs;
use std::path::PathBuf;

use bullmq_redis::__private::scripts::{self, LuaScript};
use sha1::{Digest, Sha1};

/// What one `dist/cjs/scripts/<file>.js` declares.
#[derive(Debug)]
struct Shipped {
    name: String,
    keys: usize,
    content: String,
}

fn scripts_dir() -> PathBuf {
    PathBuf::from(env!("BULLMQ_UPSTREAM_PACKAGE_DIR")).join("dist/cjs/scripts")
}

/// Extracts `content`, `name` and `keys` from a generated script module.
fn parse_shipped(file: &str, js: &str) -> Shipped {
    const OPEN: &str = "const content = `";
    const CLOSE: &str = "`;\n";
    let start = js
        .find(OPEN)
        .unwrap_or_else(|| panic!("{file}: no `{OPEN}`"))
        + OPEN.len();
    let len = js[start..]
        .find(CLOSE)
        .unwrap_or_else(|| panic!("{file}: template literal not closed"));
    let content = &js[start..start + len];
    // Without these the template literal's value is its raw text.
    assert!(
        !content.contains('\\') && !content.contains("${") && !content.contains('`'),
        "{file}: the template literal needs unescaping; extend this parser"
    );
    let rest = &js[start + len..];
    let field = |key: &str| {
        let at = rest
            .find(key)
            .unwrap_or_else(|| panic!("{file}: no `{key}` field"))
            + key.len();
        let line = rest[at..].lines().next().unwrap_or_default();
        line.trim().trim_end_matches(',').to_owned()
    };
    let name = field("name:");
    let name = name
        .strip_prefix('\'')
        .and_then(|n| n.strip_suffix('\''))
        .unwrap_or_else(|| panic!("{file}: name is not a single-quoted string: {name}"))
        .to_owned();
    let keys = field("keys:")
        .parse()
        .unwrap_or_else(|e| panic!("{file}: keys is not a number: {e}"));
    Shipped {
        name,
        keys,
        content: content.to_owned(),
    }
}

/// Every shipped script, keyed by file stem (`addLog-2`).
fn shipped() -> BTreeMap<String, Shipped> {
    let dir = scripts_dir();
    let mut out = BTreeMap::new();
    for entry in fs::read_dir(&dir).unwrap_or_else(|e| panic!("{}: {e}", dir.display())) {
        let path = entry.expect("directory entry").path();
        let file = path
            .file_name()
            .and_then(|f| f.to_str())
            .expect("utf-8 name");
        let Some(stem) = file.strip_suffix(".js") else {
            continue;
        };
        if stem == "index" {
            continue;
        }
        let js = fs::read_to_string(&path).unwrap_or_else(|e| panic!("{file}: {e}"));
        out.insert(stem.to_owned(), parse_shipped(file, &js));
    }
    out
}

fn stem(script: &LuaScript) -> String {
    format!("{}-{}", script.name, script.num_keys)
}

#[test]
fn there_are_exactly_64_scripts_and_they_match_the_shipped_set() {
    let shipped = shipped();
    assert_eq!(scripts::ALL.len(), 64);
    assert_eq!(shipped.len(), 64, "dist/cjs/scripts/*.js besides index.js");
    let ours: Vec<String> = scripts::ALL.iter().map(|s| stem(s)).collect();
    let theirs: Vec<String> = shipped.keys().cloned().collect();
    assert_eq!(ours, theirs);
}

#[test]
fn every_script_is_byte_identical_to_upstream() {
    let shipped = shipped();
    for script in scripts::ALL {
        let stem = stem(script);
        let upstream = shipped
            .get(&stem)
            .unwrap_or_else(|| panic!("no dist/cjs/scripts/{stem}.js"));
        assert_eq!(script.name, upstream.name, "{stem}: name");
        assert_eq!(script.num_keys, upstream.keys, "{stem}: keys");
        assert!(
            script.text == upstream.content,
            "{stem}: text differs from upstream (ours {} bytes, theirs {} bytes)",
            script.text.len(),
            upstream.content.len()
        );
        let sha1 = hex::encode(Sha1::digest(upstream.content.as_bytes()));
        assert_eq!(script.sha1, sha1, "{stem}: sha1");
    }
}

#[test]
fn named_constants_point_at_the_right_scripts() {
    assert_eq!(stem(&scripts::ADD_STANDARD_JOB), "addStandardJob-9");
    assert_eq!(stem(&scripts::MOVE_TO_FINISHED), "moveToFinished-14");
    assert_eq!(stem(&scripts::MOVE_TO_ACTIVE), "moveToActive-11");
    assert_eq!(stem(&scripts::GET_STATE_V2), "getStateV2-8");
    let names: std::collections::HashSet<&str> = scripts::ALL.iter().map(|s| s.name).collect();
    assert_eq!(names.len(), scripts::ALL.len(), "script names are unique");
}
