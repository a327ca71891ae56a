//! The head of a stage that starts at a source: builds the source of each
//! subtask, rewinds it to its checkpointed position, and its task.

use crate::build::builder::ChainBuilder;
use crate::build::context::BuildContext;
use crate::build::error::{BuildError, Restoring};
use crate::chain::control::Collector;
use crate::chain::task::Task;
use crate::core::subtask::SubtaskInfo;
use crate::operators::source::function::Source;
use crate::operators::source::task::{SourceTask, POSITION_STATE};

/// Head of a stage that starts at a source.
pub struct SourceChain<SF> {
    pub(crate) uid: String,
    pub(crate) factory: SF,
}

impl<S, SF> ChainBuilder<S::Out> for SourceChain<SF>
where
    S: Source,
    SF: Fn(&SubtaskInfo) -> S + Send + Sync + 'static,
{
    fn build<C: Collector<S::Out> + 'static>(
        &self,
        ctx: &mut BuildContext<'_>,
        out: C,
    ) -> Result<Box<dyn Task>, BuildError> {
        // A source with operator states (splits) may rescale: its states
        // are redistributed and its position may be empty.
        let (mut source, split) =
            crate::operators::source::split::build_source(&self.factory, &self.uid, ctx)?;
        if let Some(restore) = ctx.restore.clone() {
            let scope = restore.scope(&self.uid, &ctx.info);
            let position = if split {
                scope.inline_unless_empty(POSITION_STATE)
            } else {
                scope.inline(POSITION_STATE)
            }
            .map_err(|source| BuildError::Restore {
                task: ctx.task_name(),
                kind: "source",
                uid: self.uid.clone(),
                checkpoint: restore.id(),
                part: Restoring::Inline,
                source: Box::new(source),
            })?;
            match position {
                Some(p) => {
                    if let Err(message) = source.restore_position(p) {
                        return Err(BuildError::RestorePosition {
                            task: ctx.task_name(),
                            uid: self.uid.clone(),
                            checkpoint: restore.id(),
                            retryable: source.is_retryable(&message),
                            message,
                        });
                    }
                }
                // Its splits are its position (or it is new: it starts
                // fresh).
                None if split => {}
                None => {
                    return Err(BuildError::MissingPosition {
                        task: ctx.task_name(),
                        uid: self.uid.clone(),
                        checkpoint: restore.id(),
                        subtask: ctx.info.index,
                    })
                }
            }
        }
        source.open(ctx.wakeup.clone());
        Ok(Box::new(
            SourceTask::new(
                ctx.task_name(),
                self.uid.clone(),
                ctx.info,
                source,
                out,
                ctx.metrics.source_records.clone(),
                ctx.subtask.clone(),
                ctx.checkpointing.clone(),
            )
            .with_latency_markers(ctx.latency_interval, ctx.stage),
        ))
    }
}
