//! The command line (`--mode NAME[,NAME]`, `--test`) and the environment.

/// `name` from the environment as a number, else `default`; a value that is not a number is
/// a mistake worth stopping for.
pub fn env_u64(name: &str, default: u64) -> u64 {
    std::env::var(name).map_or(default, |v| {
        v.parse()
            .unwrap_or_else(|_| panic!("{name} must be a number"))
    })
}

/// [`env_u64`] for a count of things in memory, such as connections.
pub fn env_usize(name: &str, default: usize) -> usize {
    let default = u64::try_from(default).expect("usize fits in u64");
    usize::try_from(env_u64(name, default)).unwrap_or_else(|_| panic!("{name} fits in usize"))
}

/// `REDIS_URL`, else the local default. Kept here rather than taken from
/// `bullmq-test-support`: the official port's harnesses (another cargo project) include this
/// file and must not build our crates.
pub fn redis_url() -> String {
    std::env::var("REDIS_URL").unwrap_or_else(|_| "redis://127.0.0.1:6379".to_owned())
}

/// The one of `all` whose `name` is `s`, for a harness's `--mode`; any other name stops the
/// run, listing the names.
pub fn named<T: Copy, N: AsRef<str>>(all: &[T], name: impl Fn(T) -> N, s: &str) -> T {
    all.iter()
        .copied()
        .find(|&m| name(m).as_ref() == s)
        .unwrap_or_else(|| {
            let names: Vec<N> = all.iter().map(|&m| name(m)).collect();
            let names: Vec<&str> = names.iter().map(AsRef::as_ref).collect();
            panic!("unknown mode {s:?}: {}", names.join(", "))
        })
}

/// Whether this process's arguments include `flag`.
pub fn has_flag(flag: &str) -> bool {
    std::env::args().skip(1).any(|a| a == flag)
}

/// What this process's arguments give `flag` (`--mode A,B`, `--mode=A,B`, as often as it
/// comes), split at the commas, in order.
pub fn flag_values(flag: &str) -> Vec<String> {
    let inline = format!("{flag}=");
    let mut values = Vec::new();
    let mut args = std::env::args().skip(1);
    while let Some(arg) = args.next() {
        let list = if arg == flag {
            args.next()
                .unwrap_or_else(|| panic!("{flag} needs a value"))
        } else if let Some(list) = arg.strip_prefix(&inline) {
            list.to_owned()
        } else {
            continue;
        };
        values.extend(list.split(',').map(str::to_owned));
    }
    values
}

/// The arguments: `--test` (CI's smoke run) and the modes asked for, in order (`--mode NAME`,
/// `--mode=NAME`, each a comma-separated list). Cargo's own `--bench` and anything else are
/// ignored.
pub struct Args {
    /// `--test` was given.
    pub test: bool,
    /// The modes named, none when all are wanted.
    pub modes: Vec<String>,
}

impl Args {
    /// Reads this process's arguments.
    pub fn parse() -> Self {
        Self {
            test: has_flag("--test"),
            modes: flag_values("--mode"),
        }
    }

    /// The modes named, or `all` when none was.
    pub fn modes_or(&self, all: &[&str]) -> Vec<String> {
        if self.modes.is_empty() {
            all.iter().map(|&m| m.to_owned()).collect()
        } else {
            self.modes.clone()
        }
    }

    /// The whole run of a harness that times a count of items per mode (from `env`, 1,000 by
    /// default, see [`Args::count`]) on the Redis of `REDIS_URL`: for each mode named (else
    /// each of `all`), a warm-up on a tenth of the items (none under `--test`), then the
    /// measured run, whose line `run(url, mode, count)` returns is printed.
    pub fn time_each_mode<L: std::fmt::Display>(
        &self,
        env: &str,
        all: &[&str],
        run: &impl AsyncFn(&str, &str, usize) -> L,
    ) {
        let count = self.count(env, 1_000);
        let url = redis_url();
        runtime(false).block_on(async {
            for mode in &self.modes_or(all) {
                if !self.test {
                    run(&url, mode, count / 10).await;
                }
                println!("{}", run(&url, mode, count).await);
            }
        });
    }

    /// How many items (flows, schedulers) a mode handles: 20 under `--test`, else `env` when
    /// it is a number, else `default`.
    pub fn count(&self, env: &str, default: usize) -> usize {
        if self.test {
            20
        } else {
            std::env::var(env)
                .ok()
                .and_then(|v| v.parse().ok())
                .unwrap_or(default)
        }
    }
}

/// What the add and worker harnesses run: the Redis, the jobs per mode, the unmeasured
/// warm-up before each and the modes.
pub struct Settings<M> {
    /// `REDIS_URL`.
    pub url: String,
    /// Jobs per measured mode: `BENCH_JOBS` (20,000), 200 under `--test`.
    pub jobs: u64,
    /// Jobs of the warm-up: `BENCH_WARMUP` (2,000 at most), none under `--test`.
    pub warmup: u64,
    /// The modes to run, in order.
    pub modes: Vec<M>,
}

impl<M: Copy> Settings<M> {
    /// Reads the arguments and the environment; `parse` turns a mode's name into the mode.
    pub fn from_env(all: &[M], parse: impl Fn(&str) -> M) -> Self {
        let args = Args::parse();
        let mut modes: Vec<M> = args.modes.iter().map(|m| parse(m)).collect();
        if modes.is_empty() {
            modes = all.to_vec();
        }
        let (jobs, warmup) = if args.test {
            (200, 0)
        } else {
            let jobs = env_u64("BENCH_JOBS", 20_000);
            (jobs, env_u64("BENCH_WARMUP", 2_000.min(jobs)))
        };
        Self {
            url: redis_url(),
            jobs,
            warmup,
            modes,
        }
    }
}

/// The tokio runtime of a harness: multi-threaded, or on the main thread alone.
pub fn runtime(current_thread: bool) -> tokio::runtime::Runtime {
    if current_thread {
        tokio::runtime::Builder::new_current_thread()
    } else {
        tokio::runtime::Builder::new_multi_thread()
    }
    .enable_all()
    .build()
    .expect("tokio runtime")
}
