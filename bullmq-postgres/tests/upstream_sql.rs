//! The embedded SQL is exactly the SQL the pinned npm package ships.
//!
//! The package files are parsed here independently of the build script's
//! parser: each object literal of `sql-scripts.js` is handed to `serde_json`
//! whole, and the ledger fields of `migrations/index.js` are collected by a
//! plain text scan.

use std::collections::BTreeMap;
use std::fs;
use std::path::PathBuf;

use bullmq_postgres::__private::sql::{commands, migrations};

fn postgres_dir() -> PathBuf {
    PathBuf::from(env!("BULLMQ_UPSTREAM_PACKAGE_DIR")).join("dist/cjs/postgres")
}

/// The object literal bound to `binding` in `sql-scripts.js`, as a map.
fn shipped_object(binding: &str) -> BTreeMap<String, String> {
    let path = postgres_dir().join("sql-scripts.js");
    let js = fs::read_to_string(&path).unwrap_or_else(|e| panic!("{}: {e}", path.display()));
    // The file also says `exports.SQL_MIGRATIONS = exports.SQL_COMMANDS = void 0;`.
    let head = format!("{binding} = {{");
    let start = js.find(&head).unwrap_or_else(|| panic!("no `{head}`")) + head.len() - 1;
    let len = js[start..]
        .find("\n};")
        .unwrap_or_else(|| panic!("{binding} not closed"));
    // `{ …, }` minus the trailing comma JSON does not allow.
    let body = js[start..start + len].trim_end().trim_end_matches(',');
    serde_json::from_str(&format!("{body}\n}}"))
        .unwrap_or_else(|e| panic!("{binding} is not JSON-compatible: {e}"))
}

/// The values following `key` in the `MIGRATIONS` array, in order.
fn ledger_values(key: &str) -> Vec<String> {
    let path = postgres_dir().join("migrations/index.js");
    let js = fs::read_to_string(&path).unwrap_or_else(|e| panic!("{}: {e}", path.display()));
    let array = js
        .split("exports.MIGRATIONS = [")
        .nth(1)
        .expect("MIGRATIONS array");
    let array = array.split("\n];").next().expect("array end");
    array
        .lines()
        .map(str::trim)
        .filter_map(|line| line.strip_prefix(key))
        .map(|value| {
            value
                .trim()
                .trim_end_matches(',')
                .trim_matches('\'')
                .to_owned()
        })
        .collect()
}

#[test]
fn commands_are_the_shipped_sql() {
    let shipped = shipped_object("exports.SQL_COMMANDS");
    assert_eq!(shipped.len(), 101);
    assert_eq!(commands::ALL.len(), 101);
    let ours: Vec<String> = commands::ALL
        .iter()
        .map(|c| format!("{}.sql", c.name))
        .collect();
    let theirs: Vec<String> = shipped.keys().cloned().collect();
    assert_eq!(ours, theirs, "command names, in order");
    for command in commands::ALL {
        let text = &shipped[&format!("{}.sql", command.name)];
        assert!(
            command.text == text,
            "{}: text differs from upstream",
            command.name
        );
    }
}

#[test]
fn named_command_constants_point_at_the_right_sql() {
    assert_eq!(commands::ADD_JOB.name, "add_job");
    assert_eq!(commands::MOVE_TO_ACTIVE.name, "move_to_active");
    assert_eq!(commands::GET_DELAYED_COUNT.name, "get_delayed_count");
    assert!(commands::ADD_JOB.text.contains("add_job("));
}

#[test]
fn migrations_are_the_shipped_sql_in_version_order() {
    let shipped = shipped_object("exports.SQL_MIGRATIONS");
    assert_eq!(shipped.len(), 11);
    assert_eq!(migrations::ALL.len(), 11);

    let versions = ledger_values("version:");
    let names = ledger_values("name:");
    let min_versions = ledger_values("minClientVersion:");
    assert_eq!(versions.len(), 11);
    assert_eq!(names.len(), 11);
    assert_eq!(min_versions.len(), 11);

    for (i, migration) in migrations::ALL.iter().enumerate() {
        let expected_version = i32::try_from(i + 1).expect("small");
        assert_eq!(migration.version, expected_version, "ordered 1..=11");
        assert_eq!(migration.version.to_string(), versions[i]);
        assert_eq!(migration.name, names[i]);
        assert_eq!(migration.min_client_version, 6);
        assert_eq!(migration.min_client_version.to_string(), min_versions[i]);
        let text = &shipped[&format!("{}.sql", migration.name)];
        assert!(
            migration.text == text,
            "{}: text differs from upstream",
            migration.name
        );
    }
    assert_eq!(migrations::ALL[0].name, "0001_schema");
    assert_eq!(migrations::LATEST_VERSION, 11);
}
