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
    openssl(
        dir,
        &[
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
        ],
    );
    sign_with_ca(
        dir,
        "server",
        "/CN=localhost",
        "subjectAltName=DNS:localhost,IP:127.0.0.1\nbasicConstraints=CA:FALSE\n\
         keyUsage=digitalSignature,keyEncipherment\nextendedKeyUsage=serverAuth,clientAuth\n",
    );
}

/// `{name}.key` and a v3 `{name}.crt` for `subject` with the X.509 `extensions` (the lines of
/// an `openssl` extension file), signed by `ca.crt`/`ca.key` of `dir`.
pub fn sign_with_ca(dir: &std::path::Path, name: &str, subject: &str, extensions: &str) {
    let file = |ending: &str| format!("{name}.{ending}");
    let (key, csr, crt, ext) = (file("key"), file("csr"), file("crt"), file("ext"));
    std::fs::write(dir.join(&ext), extensions).expect("write the extension file");
    openssl(
        dir,
        &[
            "req", "-newkey", "rsa:2048", "-nodes", "-keyout", &key, "-out", &csr, "-subj", subject,
        ],
    );
    openssl(
        dir,
        &[
            "x509",
            "-req",
            "-in",
            &csr,
            "-CA",
            "ca.crt",
            "-CAkey",
            "ca.key",
            "-CAcreateserial",
            "-out",
            &crt,
            "-days",
            "1",
            "-extfile",
            &ext,
        ],
    );
}
