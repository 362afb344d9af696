//! The search rule of [`bullmq_core::search::Needle`] as SQL on the `job` table, so that a
//! PostgreSQL search answers in one query what Redis's bounded scan finds job by job.

use bullmq_core::search::Needle;

/// A `WHERE` condition on a `job` row that holds for the jobs `needle` matches, and the text
/// values of its parameters, numbered from the `first` given to [`JobSearch::of`].
///
/// Upstream's schema has no index on `data`: the condition reads every row the rest of the
/// query selects.
///
/// ```
/// use bullmq_core::search::Needle;
/// use bullmq_postgres::JobSearch;
///
/// let needle = Needle::parse(r#"{"customer":"c-17"}"#).expect("not empty");
/// let search = JobSearch::of(&needle, 2);
/// assert_eq!(search.condition, "data @> $2::jsonb");
/// assert_eq!(search.binds, [r#"{"customer":"c-17"}"#]);
/// ```
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct JobSearch {
    /// The condition, with parameters `$first`, `$first + 1`, ...
    pub condition: String,
    /// The parameters' values (text), in order.
    pub binds: Vec<String>,
}

impl JobSearch {
    /// The condition for `needle`, its parameters numbered from `first`.
    #[must_use]
    pub fn of(needle: &Needle, first: usize) -> Self {
        if let Some(contained) = needle.contained() {
            return Self {
                condition: format!("data @> ${first}::jsonb"),
                binds: vec![contained.to_string()],
            };
        }
        let folded = needle.folded().unwrap_or_default();
        let (id, part) = (first, first + 1);
        Self {
            // Every string, number or boolean at any depth (the root included), ignoring case.
            condition: format!(
                "(id = ${id} OR strpos(lower(name), ${part}) > 0 \
                 OR EXISTS (SELECT 1 FROM jsonb_path_query(data, 'strict $.**') AS v \
                            WHERE jsonb_typeof(v) IN ('string', 'number', 'boolean') \
                              AND strpos(lower(v #>> '{{}}'), ${part}) > 0))"
            ),
            binds: vec![needle.as_str().to_owned(), folded.to_owned()],
        }
    }
}
