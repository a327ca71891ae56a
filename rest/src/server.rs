//! A router served from a thread of its own: a current-thread tokio
//! runtime on a named thread (`weir-rest`, `weir-prom`), never a worker
//! core, stopped and joined when dropped. The REST endpoint and the
//! Prometheus endpoint each run one.

use std::net::TcpListener;
use std::thread::JoinHandle;

use axum::Router;

/// A serving thread; dropping it stops the server and joins the thread.
pub(crate) struct ServerThread {
    shutdown: Option<tokio::sync::oneshot::Sender<()>>,
    thread: Option<JoinHandle<()>>,
}

impl ServerThread {
    /// Serves `app` on `listener` (already bound, so that a bind error is
    /// the caller's to report before the job starts) from a new thread
    /// named `name`.
    pub(crate) fn spawn(name: &str, listener: TcpListener, app: Router) -> std::io::Result<Self> {
        listener.set_nonblocking(true)?;
        let runtime = tokio::runtime::Builder::new_current_thread()
            .enable_io()
            .enable_time()
            .build()?;
        let (tx, rx) = tokio::sync::oneshot::channel::<()>();
        let thread = std::thread::Builder::new()
            .name(name.into())
            .spawn(move || {
                runtime.block_on(async move {
                    let Ok(listener) = tokio::net::TcpListener::from_std(listener) else {
                        return;
                    };
                    let _ = axum::serve(listener, app)
                        .with_graceful_shutdown(async {
                            let _ = rx.await;
                        })
                        .await;
                });
            })?;
        Ok(Self {
            shutdown: Some(tx),
            thread: Some(thread),
        })
    }
}

impl Drop for ServerThread {
    fn drop(&mut self) {
        if let Some(tx) = self.shutdown.take() {
            let _ = tx.send(());
        }
        if let Some(t) = self.thread.take() {
            let _ = t.join();
        }
    }
}
