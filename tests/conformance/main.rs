//! One behaviour suite for every backend: each test is a generic function over a [`Store`],
//! instantiated below for Redis, for PostgreSQL and for a six-node Redis Cluster (started once
//! by this binary, with `redis-server` and `redis-cli`), each run in a store of its own (a key
//! prefix, tagged on the cluster; a schema) so the suite runs in parallel on shared servers. The cases at this level
//! go through the public API (`Queue`, `Worker`, `FlowProducer`, …); those in `backend/` go
//! through each section of the `Backend` trait itself, one file per section, as River's
//! driver test suite does for its drivers. What only one store has lives beside it
//! (`tests/redis/`, `tests/postgres/`), and what a store writes byte for byte in
//! its own crate (`bullmq-redis/tests/store/`, `bullmq-postgres/tests/store/`); where
//! Node.js's own PostgreSQL backend departs from its Redis one, the Redis behaviour is pinned
//! in `divergent.rs`, run on Redis and Redis Cluster only.

#![allow(clippy::unwrap_used, clippy::missing_panics_doc, unreachable_pub)]

use bullmq_test_support as support;

mod backend;
mod clock_skew;
mod ctx;
mod dedup;
mod divergent;
mod events;
mod fleet;
mod flow;
mod job_api;
mod outcomes;
mod queue;
mod relay;
mod scheduler;
mod store;
mod typed;
mod worker;
mod worker_control;

/// Declares one `#[tokio::test]` per case for one store.
macro_rules! cases {
    ($store:ty; $($group:ident :: $case:ident),* $(,)?) => {
        $(
            #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
            async fn $case() {
                crate::$group::$case::<$store>().await;
            }
        )*
    };
}

/// Every case of the suite, for `$store`.
macro_rules! suite {
    ($store:ty) => {
        cases!($store;
            relay::exact_topics_reach_their_subscribers,
            relay::wildcards_route_as_upstream,
            relay::retained_messages_come_first_then_expire,
            relay::a_full_inbox_drops_the_oldest_and_reports_lag,
            relay::expired_nodes_are_swept_with_their_subscriptions,
            relay::a_node_that_lost_its_lease_recovers_its_subscriptions,
            relay::bad_topics_and_options_are_refused_naming_the_fault,
            relay::a_killed_inbox_connection_loses_and_repeats_nothing,
            relay::an_interrupt_during_a_read_ends_it_at_once,
            queue::adds_and_reads_back_a_job,
            queue::add_bulk_keeps_order_and_counts,
            queue::add_bulk_names_what_was_added_when_a_job_is_refused,
            queue::custom_ids_are_not_added_twice,
            queue::delayed_jobs_wait_then_promote,
            queue::pause_resume_and_drain,
            queue::a_paused_queue_still_counts_its_waiting_jobs,
            queue::remove_clean_and_obliterate,
            queue::progress_logs_and_data_updates,
            queue::deduplication_keeps_one_job,
            queue::stored_options_round_trip,
            queue::a_large_payload_round_trips,
            queue::get_jobs_lists_every_state,
            queue::counts_per_priority,
            queue::invalid_options_are_refused_before_any_write,
            queue::odd_custom_ids_round_trip,
            queue::default_job_options_apply_under_a_jobs_own,
            queue::lifo_jobs_go_first,
            queue::duplicates_and_deduplication_ttl,
            worker::completes_jobs_with_return_values,
            worker::retries_then_fails_with_the_reason,
            worker::processes_by_priority_then_fifo,
            worker::every_job_once_under_concurrency,
            worker::delayed_job_runs_when_due,
            worker::stalled_job_is_taken_again,
            worker::unrecoverable_error_skips_retries,
            worker::rate_limiter_spaces_jobs,
            outcomes::processor_delay_is_not_an_attempt,
            outcomes::processor_back_to_wait_runs_again,
            outcomes::processor_waiting_children_without_children_runs_again,
            outcomes::processor_rate_limit_holds_the_queue,
            outcomes::backoffs_space_retries,
            outcomes::remove_on_complete_keeps_the_newest,
            outcomes::remove_on_fail_keeps_a_count,
            outcomes::remove_on_complete_true_removes_the_job,
            outcomes::remove_on_complete_by_age,
            outcomes::worker_retention_applies_to_jobs_without_their_own,
            outcomes::max_started_attempts_fails_a_restarted_job,
            outcomes::a_job_stalled_too_often_fails,
            outcomes::a_panicking_processor_fails_the_job,
            outcomes::lock_renewal_keeps_a_long_job,
            worker_control::concurrency_runs_jobs_in_parallel,
            worker_control::set_concurrency_while_running,
            worker_control::graceful_close_waits_for_jobs_in_flight,
            worker_control::close_timeout_leaves_the_job_for_the_stalled_check,
            worker_control::pause_and_resume_a_worker,
            worker_control::a_paused_queue_holds_its_workers,
            worker_control::manual_processing_with_get_next_job,
            worker_control::global_concurrency_limits_all_workers,
            worker_control::global_rate_limit_spaces_jobs,
            worker_control::metrics_count_finished_jobs,
            job_api::state_predicates_delay_and_priority,
            job_api::manual_moves_refuse_another_token,
            job_api::move_to_delayed_and_back_to_wait,
            job_api::move_to_failed_retries_and_trims_stacktraces,
            job_api::an_out_of_range_attempts_retries_by_hand_as_in_a_worker,
            job_api::retry_completed_and_failed_jobs,
            job_api::retry_jobs_and_promote_jobs_in_bulk,
            job_api::remove_refuses_a_locked_job_and_takes_its_logs,
            job_api::logs_are_trimmed_with_keep_logs,
            job_api::children_values_failures_and_dependencies,
            job_api::remove_unprocessed_children_leaves_finished_ones,
            job_api::remove_with_children_removes_the_tree,
            job_api::removing_a_child_releases_its_parent,
            job_api::a_child_of_a_missing_parent_is_refused,
            job_api::job_of_uses_the_jobs_own_options,
            events::reader_sees_the_job_lifecycle_in_order,
            events::custom_events_round_trip,
            events::reading_from_an_id_replays_what_followed_it,
            events::a_new_reader_resumes_where_the_last_stopped,
            events::wait_until_finished_answers_each_outcome,
            events::queue_and_worker_events_are_published,
            events::subscriptions_filter_by_name_and_job,
            events::close_stops_a_reader_promptly,
            events::stalled_progress_and_waiting_children_events,
            flow::the_parent_runs_after_its_children_and_reads_their_values,
            flow::fail_parent_on_failure_fails_the_parent,
            flow::continue_parent_on_failure_starts_the_parent_at_once,
            flow::ignore_dependency_on_failure_records_the_failure,
            flow::remove_dependency_on_failure_drops_the_child,
            flow::without_a_policy_the_parent_keeps_waiting,
            flow::a_parent_whose_children_already_completed_is_released,
            flow::a_processor_adds_children_and_waits_for_them,
            flow::waiting_for_a_failed_child_fails_the_job_for_good,
            flow::add_bulk_adds_every_tree_with_queue_defaults,
            flow::bad_flows_are_refused_before_anything_is_written,
            flow::a_tree_spans_queues_and_reads_back_whole,
            flow::get_flow_honours_depth_and_max_children,
            scheduler::an_every_scheduler_runs_its_iterations,
            scheduler::a_cron_scheduler_runs_on_its_pattern,
            scheduler::upsert_replaces_and_remove_removes,
            scheduler::a_limited_scheduler_stops_after_its_limit,
            scheduler::an_upsert_ignores_a_given_iteration_count,
            fleet::workers_sharing_one_backend_are_listed_and_close_alone,
            fleet::a_dropped_worker_takes_no_more_jobs_and_deregisters,
            fleet::a_pool_scaled_under_load_runs_every_job_once,
            fleet::a_pool_restarts_a_stopped_worker_then_fails_past_its_budget,
            fleet::cancel_job_and_cancel_all_reach_the_processor_with_a_reason,
            fleet::renewed_locks_are_reported,
            fleet::boxed_processors_of_different_types_share_a_collection,
            fleet::a_pool_autoscales_up_under_a_backlog_and_down_when_idle,
            dedup::simple_deduplication_holds_until_the_job_ends,
            dedup::concurrent_duplicate_adds_make_one_job,
            dedup::throttle_holds_for_the_ttl_even_after_the_job_ends,
            dedup::extend_restarts_the_ttl_with_each_add,
            dedup::replace_runs_only_the_last_delayed_job,
            clock_skew::remove_checks_locks_at_the_backends_clock,
            clock_skew::a_checker_ahead_by_less_than_the_lock_takes_nothing,
            clock_skew::renewed_locks_survive_a_skewed_stalled_check,
            clock_skew::a_delay_is_due_at_the_producers_clock,
            clock_skew::skewed_producers_and_workers_run_each_iteration_once,
            typed::a_typed_processor_gets_its_type_and_a_mismatch_fails_with_the_path,
        );
    };
}

/// Declares one `#[tokio::test]` per `Backend` section case for one store.
macro_rules! sections {
    ($store:ty; $($section:ident :: $case:ident),* $(,)?) => {
        $(
            #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
            async fn $case() {
                crate::backend::$section::$case::<$store>().await;
            }
        )*
    };
}

/// Every case of the `Backend` sections (`backend/`), for `$store`.
macro_rules! backend_suite {
    ($store:ty) => {
        sections!($store;
            add::a_duplicate_id_answers_the_existing_job,
            add::add_jobs_answers_ids_in_input_order,
            add::add_jobs_reports_each_job_when_one_is_refused,
            add::a_backend_for_another_queue_adds_there,
            blocking::a_wait_times_out_empty_and_zero_is_not_forever,
            blocking::adding_a_job_wakes_a_waiting_worker,
            events::published_events_read_back_in_order_with_their_fields,
            events::a_read_after_the_newest_id_waits_for_the_next_event,
            events::close_ends_a_read_in_flight_and_the_next,
            lifecycle::keys_name_the_queue_and_parse_back,
            lifecycle::close_marks_every_clone_closing,
            lifecycle::a_handle_closes_alone,
            schedulers::a_scheduler_is_stored_read_listed_and_counted,
            schedulers::upsert_again_replaces_the_pending_iteration,
            schedulers::removing_a_scheduler_removes_its_pending_iteration,
            transitions::take_stamps_and_announces_the_job,
            transitions::nothing_ready_reports_the_next_delayed_job,
            transitions::a_worker_rate_limit_holds_the_next_job,
            transitions::complete_stores_the_value_and_can_take_the_next,
            transitions::finishing_needs_the_holding_token,
            transitions::fail_stores_reason_and_stacktrace_and_can_take_the_next,
            transitions::retention_removes_all_or_keeps_the_newest,
            transitions::metrics_are_collected_only_when_the_worker_keeps_them,
            transitions::a_delayed_job_reports_its_due_time_and_promotes,
            transitions::back_to_wait_answers_the_rate_limit_window,
            transitions::retry_requeues_at_once_with_the_failure,
            transitions::reprocess_moves_a_finished_job_back_to_wait,
            transitions::a_parent_with_pending_children_waits_for_them,
            locks::extend_lock_renews_only_the_holders_lock,
            locks::extend_locks_answers_the_lost_ones,
            meta::meta_fields_are_set_read_and_removed,
            meta::each_queue_has_its_own_meta,
            queries::get_state_and_is_job_in_state_name_one_state,
            queries::is_finished_reports_value_reason_pending_and_missing,
            queries::is_maxed_follows_the_global_concurrency,
            queries::get_job_reads_what_was_added,
            queries::get_deduplication_job_id_names_the_holder,
            queries::get_job_logs_slices_from_either_end,
            queries::counts_per_type_and_per_priority,
            queries::get_ranges_orders_pages_and_drops_repeats,
            queries::dependency_counts_lists_and_values,
            queries::paginate_pages_processed_and_unprocessed_children,
            queries::a_child_that_cannot_be_read_is_reported_beside_the_others,
            queries::scaling_signals_count_the_backlog_and_age_its_oldest_job,
            admin::pause_holds_claims_and_resume_releases_them,
            admin::drain_removes_waiting_then_delayed_but_keeps_scheduler_jobs,
            admin::clean_removes_old_finished_jobs_up_to_the_limit,
            admin::clean_waiting_prioritized_and_delayed_by_added_time,
            admin::obliterate_refuses_unpaused_and_active_then_removes_in_batches,
            admin::retry_finished_jobs_moves_batches_back_to_wait,
            admin::promote_jobs_makes_delayed_jobs_ready_earliest_first,
            admin::set_rate_limit_holds_the_queue_until_removed,
            admin::remove_orphaned_jobs_leaves_real_jobs,
            mutations::update_data_replaces_the_payload,
            mutations::update_progress_stores_it_and_emits_progress,
            mutations::add_log_counts_lines_and_honours_keep_logs,
            mutations::clear_logs_keeps_the_newest_or_removes_all,
            mutations::change_delay_reschedules_from_now_only_delayed_jobs,
            mutations::change_priority_reorders_waiting_jobs,
            mutations::remove_refuses_locked_and_scheduler_jobs,
            mutations::remove_with_children_takes_the_subtree_unless_a_child_is_locked,
            mutations::removing_the_last_child_releases_its_parent,
            mutations::remove_unprocessed_children_skips_active_ones,
            mutations::remove_child_dependency_detaches_once_and_names_the_parent,
            mutations::deduplication_keys_are_removed_for_their_holder_or_by_force,
        );
    };
}

/// Where upstream's own PostgreSQL backend behaves differently (each case says how): the
/// Redis behaviour, for `$store`.
macro_rules! divergent_suite {
    ($store:ty) => {
        cases!($store;
            divergent::an_expired_lock_is_refused,
            divergent::a_checker_ahead_by_more_than_the_lock_takes_nothing,
            divergent::move_to_wait_with_another_token_is_refused,
            divergent::log_by_id_returns_the_number_of_lines,
            divergent::removing_a_job_publishes_removed,
            divergent::waiting_for_no_children_skips_the_lock_check,
            divergent::removing_the_unprocessed_children_releases_the_parent,
            divergent::removed_children_are_not_counted_as_unprocessed,
            divergent::data_is_kept_as_written,
            divergent::a_parent_removed_with_its_last_child_frees_its_own_deduplication_id,
        );
    };
}

mod redis {
    suite!(crate::store::RedisStore);

    mod backend {
        backend_suite!(crate::store::RedisStore);
    }

    divergent_suite!(crate::store::RedisStore);
}

/// The Redis cases again on a six-node Redis Cluster (three primaries, three replicas)
/// started once for this binary, each test under a prefix with a hash tag of its own.
mod redis_cluster {
    suite!(crate::store::RedisClusterStore);

    mod backend {
        backend_suite!(crate::store::RedisClusterStore);
    }

    divergent_suite!(crate::store::RedisClusterStore);
}

mod postgres {
    suite!(crate::store::PostgresStore);

    mod backend {
        backend_suite!(crate::store::PostgresStore);
    }
}
