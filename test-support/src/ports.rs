//! Free loopback ports for servers of a test's own.

/// A loopback port nothing listens on right now (another process may still take it before the
/// caller binds it: callers that start a server retry on "address in use").
pub fn free_port() -> u16 {
    let listener = std::net::TcpListener::bind(("127.0.0.1", 0)).expect("bind a free port");
    listener.local_addr().expect("local address").port()
}
