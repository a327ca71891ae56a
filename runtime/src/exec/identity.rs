//! A run's identity: its job id and the fingerprint of what its state
//! means, made from the job graph and the options.

use std::path::{Path, PathBuf};

use crate::api::graph::{JobGraph, JobPlan};
use crate::checkpoint::lineage::{
    new_job_id, Fingerprint, JOB, MAX_PARALLELISM, OPERATOR, OUTPUT, PARAMETER,
};
use crate::exec::options::ExecutionOptions;

/// Who a run is and what its state means.
#[derive(Clone, Debug)]
pub struct RunIdentity {
    /// This run's job id.
    pub job_id: String,
    /// The fingerprint every checkpoint of the run records.
    pub fingerprint: Fingerprint,
    /// The job's declared output directories, absolute.
    pub outputs: Vec<PathBuf>,
}

/// What a run's identity is made of.
struct Described<'a> {
    name: &'a str,
    uids: &'a [String],
    parameters: &'a [(String, String)],
    outputs: &'a [PathBuf],
}

impl RunIdentity {
    /// The identity of a new run of `job` with `options`: the job's name,
    /// max parallelism, operator uids, declared parameters and output
    /// directories (absolute paths, so that the same directory named two
    /// ways is one).
    pub fn of(job: &JobGraph, options: &ExecutionOptions) -> Self {
        Self::new(
            Described {
                name: job.name(),
                uids: &job.uids(),
                parameters: job.parameters(),
                outputs: job.output_directories(),
            },
            options,
        )
    }

    /// [`RunIdentity::of`] the job as execution took it.
    pub(crate) fn of_plan(job: &JobPlan, options: &ExecutionOptions) -> Self {
        Self::new(
            Described {
                name: job.name(),
                uids: job.uids(),
                parameters: job.parameters(),
                outputs: job.output_directories(),
            },
            options,
        )
    }

    /// The identity of a job by what describes it.
    fn new(job: Described<'_>, options: &ExecutionOptions) -> Self {
        let Described {
            name,
            uids,
            parameters,
            outputs,
        } = job;
        let outputs: Vec<PathBuf> = outputs.iter().map(|d| absolute(d)).collect();
        let mut entries = vec![
            (JOB.to_owned(), name.to_owned()),
            (
                MAX_PARALLELISM.to_owned(),
                options.max_parallelism.to_string(),
            ),
        ];
        entries.extend(uids.iter().map(|u| (OPERATOR.to_owned(), u.clone())));
        entries.extend(
            parameters
                .iter()
                .map(|(n, v)| (format!("{PARAMETER} {n}"), v.clone())),
        );
        entries.extend(
            outputs
                .iter()
                .map(|d| (OUTPUT.to_owned(), d.display().to_string())),
        );
        Self {
            job_id: new_job_id(),
            fingerprint: Fingerprint::new(entries),
            outputs,
        }
    }
}

/// `path` made absolute against the working directory (without resolving
/// links: the directory may not exist yet).
fn absolute(path: &Path) -> PathBuf {
    std::path::absolute(path).unwrap_or_else(|_| path.to_path_buf())
}
