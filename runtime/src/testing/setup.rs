//! Where an operator harness runs its operator: uid, subtask, key groups,
//! processing time, and the snapshot it restores.

use crate::build::context::FunctionSite;
use crate::core::subtask::SubtaskInfo;
use crate::testing::snapshot::OperatorSnapshot;

/// The uid operator harnesses give their operator unless told otherwise.
pub const DEFAULT_UID: &str = "operator-under-test";

/// How an operator harness sets up its operator (Flink's harness
/// constructors' `maxParallelism, parallelism, subtaskIndex` and
/// `initializeState(snapshot)`): by default subtask 0 of 1 of 128 key
/// groups, uid `operator-under-test`, processing time 0, fresh state.
///
/// ```
/// use weir_runtime::testing::{HarnessSetup, OperatorSnapshot};
///
/// fn restore_second_of_two(snapshot: &OperatorSnapshot) -> HarnessSetup {
///     HarnessSetup::new().subtask(1, 2).restore(snapshot)
/// }
/// ```
#[derive(Clone, Debug)]
pub struct HarnessSetup {
    pub(crate) uid: String,
    pub(crate) info: SubtaskInfo,
    pub(crate) processing_time: i64,
    pub(crate) restore: Option<OperatorSnapshot>,
}

impl Default for HarnessSetup {
    fn default() -> Self {
        Self::new()
    }
}

impl HarnessSetup {
    /// Subtask 0 of 1, 128 key groups, uid `operator-under-test`,
    /// processing time 0, nothing restored.
    pub fn new() -> Self {
        Self {
            uid: DEFAULT_UID.to_owned(),
            info: SubtaskInfo {
                index: 0,
                parallelism: 1,
                worker: 0,
                max_parallelism: 128,
            },
            processing_time: 0,
            restore: None,
        }
    }

    /// The operator's uid (what its state is stored under: a snapshot
    /// restores into an operator of the same uid).
    pub fn uid(mut self, uid: &str) -> Self {
        self.uid = uid.to_owned();
        self
    }

    /// Runs subtask `index` of `parallelism`: a keyed operator then owns
    /// only its share of the key groups.
    ///
    /// # Panics
    ///
    /// If `index >= parallelism`.
    pub fn subtask(mut self, index: usize, parallelism: usize) -> Self {
        assert!(
            index < parallelism,
            "subtask {index} of parallelism {parallelism} does not exist"
        );
        self.info.index = index;
        self.info.parallelism = parallelism;
        self
    }

    /// The number of key groups (`pipeline.max-parallelism`), 128 by
    /// default; a snapshot restores only with the same number.
    pub fn max_parallelism(mut self, key_groups: u32) -> Self {
        self.info.max_parallelism = key_groups;
        self
    }

    /// The processing time (ms) the manual clock starts at.
    pub fn processing_time(mut self, ms: i64) -> Self {
        self.processing_time = ms;
        self
    }

    /// Restores `snapshot` into the operator before its first record
    /// (Flink's `initializeState`): the operator's uid and number of key
    /// groups become the snapshot's; its parallelism and subtask stay
    /// what [`subtask`](Self::subtask) says, so a snapshot of another
    /// parallelism (see [`OperatorSnapshot::merge`]) is rescaled.
    pub fn restore(mut self, snapshot: &OperatorSnapshot) -> Self {
        self.uid = snapshot.uid().to_owned();
        self.info.max_parallelism = snapshot.max_parallelism();
        self.restore = Some(snapshot.clone());
        self
    }

    /// The subtask the operator runs as.
    pub fn info(&self) -> SubtaskInfo {
        self.info
    }

    /// Where the function is made: as in a job with checkpointing on, so
    /// that its state names are checked.
    pub(crate) fn site(&self, what: &'static str) -> FunctionSite<'_> {
        FunctionSite {
            task: format!(
                "{} ({}/{})",
                self.uid,
                self.info.index + 1,
                self.info.parallelism
            ),
            uid: &self.uid,
            what,
            info: self.info,
            check_state_names: true,
            restore: self.restore.as_ref().map(|s| s.checkpoint()),
        }
    }
}
