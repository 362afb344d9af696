//! Throwaway certificates for the TLS tests, made with the `openssl` command.

use std::process::Command;

/// Runs `openssl args…` in `dir`; panics with its output when it fails.
pub fn openssl(dir: &std::path::Path, args: &[&str]) {
    let out = Command::new("openssl")
        .args(args)
        .current_dir(dir)
        .output()
        .unwrap_or_else(|e| panic!("cannot run `openssl` ({e}): install OpenSSL"));
    assert!(
        out.status.success(),
        "openssl {args:?} failed:\n{}",
        String::from_utf8_lossy(&out.stderr)
    );
}

/// `ca.crt`/`ca.key` and a CA-signed `server.crt`/`server.key` for `localhost` and
/// `127.0.0.1`, made with the `openssl` command. The server certificate is good for clients too:
/// Redis Cluster nodes present it to each other on the TLS cluster bus.
pub fn make_test_certificates(dir: &std::path::Path) {
    let run = |args: &[&str]| openssl(dir, args);
    std::fs::write(
        dir.join("server.ext"),
        "subjectAltName=DNS:localhost,IP:127.0.0.1\nbasicConstraints=CA:FALSE\n\
         keyUsage=digitalSignature,keyEncipherment\nextendedKeyUsage=serverAuth,clientAuth\n",
    )
    .expect("write server.ext");
    run(&[
        "req",
        "-x509",
        "-newkey",
        "rsa:2048",
        "-nodes",
        "-keyout",
        "ca.key",
        "-out",
        "ca.crt",
        "-days",
        "1",
        "-subj",
        "/CN=bullmq test CA",
    ]);
    run(&[
        "req",
        "-newkey",
        "rsa:2048",
        "-nodes",
        "-keyout",
        "server.key",
        "-out",
        "server.csr",
        "-subj",
        "/CN=localhost",
    ]);
    run(&[
        "x509",
        "-req",
        "-in",
        "server.csr",
        "-CA",
        "ca.crt",
        "-CAkey",
        "ca.key",
        "-CAcreateserial",
        "-out",
        "server.crt",
        "-days",
        "1",
        "-extfile",
        "server.ext",
    ]);
}
