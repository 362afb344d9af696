//! A throwaway PostgreSQL cluster that asks for passwords.

use crate::pg_cluster::Cluster;

impl Cluster {
    /// Starts the cluster asking every role for its password (`scram-sha-256`) over TCP, but
    /// the tests' own superuser `postgres`.
    pub fn start_with_passwords(&self) {
        self.write_data_file(
            "pg_hba.conf",
            b"local all all trust\n\
              host all postgres 127.0.0.1/32 trust\n\
              host all all 127.0.0.1/32 scram-sha-256\n",
        );
        self.pg_ctl("start");
    }
}
