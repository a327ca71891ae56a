//! What the sources of a watermark alignment group share (Flink's
//! `withWatermarkAlignment`, whose source coordinators aggregate the
//! group's watermarks): one slot per source subtask holding its current
//! watermark, and the group's minimum over them.
//!
//! A job's attempt owns one [`WatermarkAlignmentGroups`]; every source
//! subtask whose strategy names a group joins it while its task is built
//! ([`WatermarkAlignmentGroups::join`]), on whichever worker, so every
//! member has joined before the workers are released. A member then
//! publishes its watermark into its own slot (a relaxed atomic store, on
//! its own cache line) and reads the others' to find the group's
//! minimum; workers are threads of one process, so no message is needed.
//! The first minimum read seals the group's member list: after that it is
//! read without a lock.
//!
//! A slot holds [`NOT_REPORTED`] (`i64::MIN`) until its subtask emitted a
//! watermark: as in Flink, a source that has none yet does not hold the
//! group back. An idle or finished source publishes `i64::MAX`.

use std::collections::HashMap;
use std::sync::atomic::{AtomicI64, Ordering};
use std::sync::{Arc, Mutex, OnceLock};

/// What a slot holds before its subtask emitted a watermark.
pub const NOT_REPORTED: i64 = i64::MIN;

/// One member's published watermark, alone on its cache line (and the
/// next: the adjacent-line prefetcher pairs them).
#[repr(align(128))]
#[derive(Debug)]
struct Slot(AtomicI64);

/// The members of one group.
#[derive(Debug, Default)]
struct Group {
    joining: Mutex<Vec<Arc<Slot>>>,
    /// The members, fixed at the first read of the minimum.
    sealed: OnceLock<Box<[Arc<Slot>]>>,
}

/// The watermark alignment groups of one attempt of a job, by name.
#[derive(Debug, Default)]
pub struct WatermarkAlignmentGroups {
    groups: Mutex<HashMap<String, Arc<Group>>>,
}

impl WatermarkAlignmentGroups {
    /// Joins group `name` (created if new) as a new member that has not
    /// reported a watermark. Called while tasks are built, before any
    /// member reads the group's minimum.
    pub fn join(&self, name: &str) -> AlignmentGroupMember {
        let group = self
            .groups
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .entry(name.to_owned())
            .or_default()
            .clone();
        let slot = Arc::new(Slot(AtomicI64::new(NOT_REPORTED)));
        debug_assert!(
            group.sealed.get().is_none(),
            "a source joined alignment group `{name}` after it was sealed"
        );
        group
            .joining
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .push(slot.clone());
        AlignmentGroupMember { group, slot }
    }
}

/// One source subtask's membership of an alignment group.
#[derive(Debug)]
pub struct AlignmentGroupMember {
    group: Arc<Group>,
    slot: Arc<Slot>,
}

impl AlignmentGroupMember {
    /// Publishes this member's current watermark (`i64::MAX` when idle or
    /// finished, [`NOT_REPORTED`] before its first).
    #[inline]
    pub fn publish(&self, watermark: i64) {
        self.slot.0.store(watermark, Ordering::Relaxed);
    }

    /// The smallest watermark the group's members reported (this one's
    /// too), or `None` if none has reported one.
    pub fn group_minimum(&self) -> Option<i64> {
        let members = self.group.sealed.get_or_init(|| {
            self.group
                .joining
                .lock()
                .unwrap_or_else(|e| e.into_inner())
                .clone()
                .into_boxed_slice()
        });
        members
            .iter()
            .map(|s| s.0.load(Ordering::Relaxed))
            .filter(|&w| w != NOT_REPORTED)
            .min()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_minimum_is_over_the_members_that_reported() {
        let groups = WatermarkAlignmentGroups::default();
        let a = groups.join("g");
        let b = groups.join("g");
        let other = groups.join("h");
        assert_eq!(a.group_minimum(), None, "nobody reported");
        a.publish(100);
        assert_eq!(b.group_minimum(), Some(100), "b has none yet");
        b.publish(40);
        other.publish(-5);
        assert_eq!(a.group_minimum(), Some(40), "group h is another group");
        b.publish(i64::MAX);
        assert_eq!(
            a.group_minimum(),
            Some(100),
            "an idle member holds nobody back"
        );
        assert_eq!(other.group_minimum(), Some(-5));
    }

    #[test]
    fn members_on_other_threads_see_each_other() {
        let groups = Arc::new(WatermarkAlignmentGroups::default());
        let members: Vec<_> = (0..4).map(|_| groups.join("g")).collect();
        std::thread::scope(|s| {
            for (i, m) in members.iter().enumerate() {
                s.spawn(move || m.publish(10 * i as i64 + 10));
            }
        });
        assert_eq!(members[3].group_minimum(), Some(10));
    }
}
