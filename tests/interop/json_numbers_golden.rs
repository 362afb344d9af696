//! Golden test of the JSON number writer against Node.js itself: doubles from random bit
//! patterns (a fixed seed) and the edge cases of `Number::toString`, written by
//! `bullmq_core::json::to_string` and by `JSON.stringify` (`tests/node/number-golden.mjs`,
//! one Node.js process for the whole batch), must be the same text. No datastore is used.

#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::io::Write as _;
use std::process::{Command, Stdio};

use bullmq_core::json;

/// Random doubles in the batch, besides the edge cases.
const RANDOM: usize = 200_000;

/// The doubles whose text changes notation or rounding: zeros, subnormals, the safe-integer
/// limit, the 1e21 and 1e-7 switches between plain and exponent notation, the extremes.
fn edge_cases() -> Vec<f64> {
    let mut cases = vec![
        0.0,
        -0.0,
        f64::from_bits(1),
        f64::from_bits(0x000f_ffff_ffff_ffff),
        f64::MIN_POSITIVE,
        f64::MAX,
        f64::MIN,
        f64::EPSILON,
        f64::NAN,
        f64::INFINITY,
        f64::NEG_INFINITY,
        5e-324,
        0.1 + 0.2,
        1.0 / 3.0,
        123_456_789.123_456_79,
    ];
    let safe = 9_007_199_254_740_992.0_f64; // 2^53
    for n in [safe - 1.0, safe, safe + 2.0, -safe - 2.0] {
        cases.push(n);
    }
    for exp in -330..=310 {
        let p: f64 = format!("1e{exp}").parse().unwrap();
        cases.extend([p, -p, p * 1.5, 2.0 * p]);
    }
    for around in [1e21, 1e-7, 1e-6, 1e20, 1e15, 1e16, 1e17] {
        let bits = f64::to_bits(around);
        cases.extend((bits - 3..=bits + 3).map(f64::from_bits));
    }
    cases.extend([999_999_999_999_999_900_000.0, 1e21 - 65_536.0]);
    cases
}

/// `JSON.stringify` of `doubles` as one array, from one Node.js process.
fn node_text(doubles: &[f64]) -> String {
    let mut input = String::with_capacity(doubles.len() * 17);
    for d in doubles {
        input.push_str(&format!("{:016x}\n", d.to_bits()));
    }
    let mut child = Command::new("node")
        .arg("number-golden.mjs")
        .current_dir(support_node_dir())
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("cannot run `node`: install Node.js 20 to run the interop tests");
    // Written from a thread, so that a full stdout pipe cannot block the write.
    let mut stdin = child.stdin.take().unwrap();
    let writer = std::thread::spawn(move || stdin.write_all(input.as_bytes()));
    let out = child.wait_with_output().unwrap();
    writer.join().unwrap().unwrap();
    assert!(
        out.status.success(),
        "node number-golden.mjs failed: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    String::from_utf8(out.stdout).unwrap()
}

fn support_node_dir() -> std::path::PathBuf {
    std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/node")
}

#[test]
fn doubles_are_written_as_json_stringify_writes_them() {
    let mut rng = fastrand::Rng::with_seed(0x5eed_1e21);
    let mut doubles = edge_cases();
    let edges = doubles.len();
    doubles.extend((0..RANDOM).map(|_| f64::from_bits(rng.u64(..))));
    // Doubles of every magnitude are rare among random bits' exponents near the extremes;
    // add random mantissas at each exponent that matters for the notation switch.
    for exp in 1000..1100_u64 {
        doubles.extend((0..50).map(|_| f64::from_bits((exp << 52) | (rng.u64(..) >> 12))));
    }

    let ours = json::to_string(&doubles).unwrap();
    let node = node_text(&doubles);
    if ours != node {
        let ours: Vec<&str> = ours.trim_matches(['[', ']']).split(',').collect();
        let node: Vec<&str> = node.trim_matches(['[', ']']).split(',').collect();
        assert_eq!(ours.len(), node.len(), "not as many numbers");
        let differing: Vec<usize> = (0..ours.len()).filter(|i| ours[*i] != node[*i]).collect();
        let wrong: Vec<String> = differing
            .iter()
            .copied()
            .take(20)
            .map(|i| {
                format!(
                    "bits {:016x}: ours {} node {}",
                    doubles[i].to_bits(),
                    ours[i],
                    node[i]
                )
            })
            .collect();
        panic!(
            "{} differences (first 20):\n{}",
            differing.len(),
            wrong.join("\n")
        );
    }
    assert!(doubles.len() >= 100_000 + edges);
}
