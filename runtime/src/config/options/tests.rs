//! Options made from a configuration.

use std::time::Duration;

use crate::config::Config;
use crate::core::barrier::BarrierMode;
use crate::exchange::debloat::DebloatOptions;
use crate::exec::options::ExecutionOptions;

fn load(sets: &[&str]) -> ExecutionOptions {
    let sets: Vec<String> = sets.iter().map(|s| s.to_string()).collect();
    ExecutionOptions::from_config(&Config::load(None, &sets).expect("valid config"))
}

/// The keys of checkpointing under backpressure reach the options the
/// runtime is built from, and the alignment timeout means what
/// configs/README.md says.
#[test]
fn unaligned_and_debloat_options_come_from_the_config() {
    let on = [
        "execution.checkpointing.interval=1s",
        "state.checkpoints.dir=/tmp/c",
    ];
    let defaults = load(&on);
    let c = defaults.checkpointing.as_ref().expect("checkpointing on");
    assert!(!c.unaligned);
    assert_eq!(c.aligned_checkpoint_timeout, Duration::ZERO);
    assert_eq!(c.barrier_mode(), BarrierMode::Aligned, "aligned by default");
    assert_eq!(defaults.debloat, None, "debloating off by default");

    let unaligned = load(&[&on[..], &["execution.checkpointing.unaligned.enabled=true"]].concat());
    let c = unaligned.checkpointing.expect("checkpointing on");
    assert_eq!(
        c.barrier_mode(),
        BarrierMode::Unaligned,
        "unaligned from the start"
    );

    // Flink 1's name of the switch, as Flink 1.x scripts set it.
    let old_name = load(&[&on[..], &["execution.checkpointing.unaligned=true"]].concat());
    let c = old_name.checkpointing.expect("checkpointing on");
    assert_eq!(c.barrier_mode(), BarrierMode::Unaligned, "the older name");

    let timeout = [
        "execution.checkpointing.unaligned.enabled=true",
        "execution.checkpointing.aligned-checkpoint-timeout=100ms",
    ];
    let c = load(&[&on[..], &timeout].concat())
        .checkpointing
        .expect("on");
    assert_eq!(
        c.barrier_mode(),
        BarrierMode::AlignedWithTimeout(Duration::from_millis(100))
    );
    // A timeout alone changes nothing.
    let c = load(&[&on[..], &timeout[1..]].concat())
        .checkpointing
        .expect("on");
    assert_eq!(c.barrier_mode(), BarrierMode::Aligned);
    // Set directly (tests), at-least-once never unaligns.
    let mut c = ExecutionOptions::with_workers(1)
        .with_checkpointing(Duration::from_secs(1), "/tmp/c")
        .checkpointing
        .expect("on");
    c.unaligned = true;
    assert_eq!(c.barrier_mode(), BarrierMode::Unaligned);
    c.exactly_once = false;
    assert_eq!(c.barrier_mode(), BarrierMode::AtLeastOnce);

    let debloat = load(&[
        "taskmanager.network.memory.buffer-debloat.enabled=true",
        "taskmanager.network.memory.buffer-debloat.target=30ms",
        "taskmanager.memory.min-segment-size=512b",
    ]);
    let d = debloat.debloat.expect("debloating on");
    assert_eq!(
        (
            d.target,
            d.period,
            d.samples,
            d.threshold_percentages,
            d.min_buffer_size
        ),
        (
            Duration::from_millis(30),
            Duration::from_millis(50),
            20,
            25,
            512
        )
    );
}

/// The debloating keys reach the debloater's options.
#[test]
fn debloat_options_come_from_their_keys() {
    const MS: Duration = Duration::from_millis(1);
    let mut c = Config::default();
    c.set("taskmanager.network.memory.buffer-debloat.target", "1s")
        .unwrap();
    c.set("taskmanager.memory.min-segment-size", "1kb").unwrap();
    let o = DebloatOptions::from_config(&c);
    assert_eq!((o.target, o.min_buffer_size), (1000 * MS, 1024));
}
