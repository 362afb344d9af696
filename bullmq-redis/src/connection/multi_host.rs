//! What the URLs naming several nodes share (`redis+cluster://`, `redis+sentinel://`): a
//! scheme of their own, the user information, a comma-separated `host:port` list, a path and
//! a query. Each kind reads its path and query its own way.

/// A multi-node URL taken apart; borrowed from the URL.
pub(super) struct MultiHostUrl<'a> {
    /// The scheme of each node's own URL: `redis` or `rediss`.
    pub(super) node_scheme: &'static str,
    /// `user:password@`, or empty; never printed.
    pub(super) user_info: &'a str,
    /// The nodes named, in order.
    pub(super) hosts: Vec<(String, u16)>,
    /// What follows the hosts' `/`, or empty.
    pub(super) path: &'a str,
    /// What follows `?`, or empty.
    pub(super) query: &'a str,
}

impl<'a> MultiHostUrl<'a> {
    /// `url` taken apart when its scheme is one of `schemes` (`(scheme, node scheme)` pairs),
    /// `Ok(None)` for any other URL, or why a host is not valid (never with the password).
    /// A host without a port gets `default_port`.
    pub(super) fn split(
        url: &'a str,
        schemes: &[(&str, &'static str)],
        default_port: u16,
    ) -> Result<Option<Self>, String> {
        let Some((scheme, rest)) = url.split_once("://") else {
            return Ok(None);
        };
        let Some(&(_, node_scheme)) = schemes.iter().find(|(s, _)| *s == scheme) else {
            return Ok(None);
        };
        let (rest, query) = rest.split_once('?').unwrap_or((rest, ""));
        let (user_info, rest) = match rest.rfind('@') {
            Some(at) => (&rest[..=at], &rest[at + 1..]),
            None => ("", rest),
        };
        let (hosts, path) = rest.split_once('/').unwrap_or((rest, ""));
        let hosts = hosts
            .split(',')
            .filter(|h| !h.is_empty())
            .map(|h| super::cluster::parse_host_port(h, default_port))
            .collect::<Result<_, _>>()?;
        Ok(Some(Self {
            node_scheme,
            user_info,
            hosts,
            path,
            query,
        }))
    }
}
