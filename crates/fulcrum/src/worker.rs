//! A worker's state in one place. Every structure a module keeps per worker (buffer and
//! connection pools, the HTTP/2 registries and idle tasks, caches of formatted dates and syslog
//! headers, the clock of the turn, the random generator, the soft-stop flag) is one slot of a
//! [`Context`]. A worker thread builds its context and enters it for its whole life; a test
//! builds as many as it likes and enters each in turn, so two workers' pools can be filled and
//! observed on one thread, without a runtime. A thread that entered none (the main thread,
//! helper threads, tests that do not care) has its own, each slot made when first used and freed
//! when the thread ends.
//!
//! Slots are named here ([`Id`], with what each holds) and typed by the module that owns each
//! ([`Slot`]): this module is in the lowest layer and cannot know the types of the layers above,
//! and the modules above must not see each other's state. The current slots are one
//! thread-local array of pointers, so reaching a slot costs what a thread-local costs (one load
//! and a test), and entering a context swaps the array.
//!
//! Not here: the allocator's free lists (`memory`, which cannot allocate a slot) and the other
//! crates' caches (`fulcrum-h2`'s, `fulcrum-config`'s, `fulcrum-pattern`'s), below this crate.
//!
//! The third module with `unsafe` (after `memory` and `sys`): a slot's value is reached through
//! a pointer whose type its `Id` fixes, which the compiler cannot check across layers (debug
//! builds do, at every access).
//!
//! Owns: the slot table, contexts and entering them. Must not touch: what is in the slots.
#![allow(unsafe_code)]

use std::cell::Cell;
use std::marker::PhantomData;
use std::ptr;

/// The slots, one per piece of per-worker state, with the module that owns it.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[repr(usize)]
pub enum Id {
    /// `clock`: the time of this turn of the event loop.
    Clock,
    /// `clock`: the share of the last second this worker waited (`idle_pct`).
    Idle,
    /// `random`: the generator of the balancers' picks and `rand()`.
    Random,
    /// `lifecycle`: the soft-stop flag.
    Stopping,
    /// `lifecycle`: the resting connections' sockets a soft stop shuts.
    Watched,
    /// `lifecycle`: the notification a soft stop wakes.
    StopNotify,
    /// `lifecycle`: the worker's number (the `thread` fetch).
    ThreadNo,
    /// `log::dates`: the local time of the last second asked for.
    Dates,
    /// `log::batch`: datagrams kept for one `sendmmsg`.
    LogBatch,
    /// `log::syslog`: recently built syslog headers.
    SyslogHeaders,
    /// `log::syslog`: the datagram socket for UNIX targets.
    SyslogUnix,
    /// `log::syslog`: the UDP sockets, one connected to each target.
    SyslogUdp,
    /// `connection`: receive buffers for reuse.
    Buffers,
    /// `tls`: the scratch buffer of certificate reads.
    TlsScratch,
    /// `tls`: the certificate the last handshake step chose, and the secrets it logged
    /// (`connection::keylog`).
    TlsChosen,
    /// `server::users`: this worker's copy of the server chunks.
    ServerChunks,
    /// `server::users`: the session whose task is being polled.
    ServerCurrent,
    /// `rules::live`: the current value of each changed `Live`.
    RulesLive,
    /// `frontend::log`: the log line being built.
    LogLine,
    /// `runtime::sessions`: this worker's session table.
    Sessions,
    /// `http::pool`: idle server connections.
    ServerPool,
    /// `http::session::spare`: parked sessions' memory for reuse.
    Spares,
    /// `http::h2`: the head HTTP/1 text is parsed into on its way to frames.
    H2Head,
    /// `http::h2::hpack`: the buffer header blocks are encoded into.
    H2Scratch,
    /// `http::h2::tasks`: idle tasks that serve streams.
    H2Tasks,
    /// `http::h2::upstream`: HTTP/2 connections to servers.
    H2Upstream,
    /// `http::h2::frontconn`: client connections' shared parts.
    H2Front,
    /// `http::h2::backconn`: server connections' shared parts.
    H2Back,
    /// `health::http`: the head check answers are parsed into.
    CheckHead,
    /// `spoe`: the connections to each engine's agent.
    Spoe,
    /// `http::fcgi::mux`: FastCGI connections shared by several requests.
    FcgiMux,
    /// `lua`: the worker's Lua state.
    Lua,
    /// `lua`: the states the configuration's parser runs scripts in (on the thread reading it).
    LuaCheck,
}

const COUNT: usize = Id::LuaCheck as usize + 1;

/// Frees a slot's value (made by [`Slot::make`] from a `Box<T>`).
type Free = unsafe fn(*mut ());

/// The current slots of a thread: pointers to values (null: not made yet) and how to free each.
/// No destructor, so reaching it is a plain thread-local access.
struct Table {
    values: [Cell<*mut ()>; COUNT],
    frees: [Cell<Option<Free>>; COUNT],
    #[cfg(debug_assertions)]
    types: [Cell<Option<std::any::TypeId>>; COUNT],
}

impl Table {
    const fn new() -> Self {
        Table {
            values: [const { Cell::new(ptr::null_mut()) }; COUNT],
            frees: [const { Cell::new(None) }; COUNT],
            #[cfg(debug_assertions)]
            types: [const { Cell::new(None) }; COUNT],
        }
    }
}

thread_local! {
    static CURRENT: Table = const { Table::new() };
    /// Frees the thread's own slots when it ends (armed when a slot is first made).
    static OWN: Own = const { Own };
}

struct Own;

impl Drop for Own {
    fn drop(&mut self) {
        free_current();
    }
}

/// Frees every current slot, highest first. A value's drop may use another slot (an idle
/// connection gives its buffer back): such a slot is made again and freed by the next pass.
fn free_current() {
    for _ in 0..4 {
        let mut freed = false;
        for i in (0..COUNT).rev() {
            let (p, free) =
                CURRENT.with(|t| (t.values[i].replace(ptr::null_mut()), t.frees[i].take()));
            #[cfg(debug_assertions)]
            CURRENT.with(|t| t.types[i].set(None));
            if let (false, Some(free)) = (p.is_null(), free) {
                // SAFETY: `p` was made by `Slot::make` with this `free`, and is no longer
                // reachable from the table.
                unsafe { free(p) };
                freed = true;
            }
        }
        if !freed {
            return;
        }
    }
}

/// One module's slot, declared as a `static` in that module: `Id` names it, `T` is its type,
/// `init` makes it when a context first uses it. Each `Id` is declared by one `Slot` only
/// (checked in debug builds).
pub struct Slot<T: 'static> {
    id: Id,
    init: fn() -> T,
    _t: PhantomData<fn() -> T>,
}

impl<T: 'static> Slot<T> {
    pub const fn new(id: Id, init: fn() -> T) -> Self {
        Slot { id, init, _t: PhantomData }
    }

    /// Runs `f` with the current context's value of this slot (made now if it is not yet).
    #[inline]
    pub fn with<R>(&'static self, f: impl FnOnce(&T) -> R) -> R {
        let i = self.id as usize;
        let p = CURRENT.with(|t| t.values[i].get());
        let p = if p.is_null() { self.make() } else { p };
        #[cfg(debug_assertions)]
        CURRENT.with(|t| {
            assert_eq!(t.types[i].get(), Some(std::any::TypeId::of::<T>()), "slot {:?}", self.id)
        });
        // SAFETY: a non-null value of slot `i` was made by `make` of the one `Slot<T>` with
        // this id (checked above in debug builds). It is freed only by `free_current` (the
        // thread's end, or a context's drop, never while `f` runs on this thread), and
        // entering another context moves the pointer without freeing it. Only shared
        // references are given out; the types in slots mutate through `Cell`/`RefCell`.
        f(unsafe { &*(p as *const T) })
    }

    #[cold]
    #[inline(never)]
    fn make(&'static self) -> *mut () {
        let value = Box::into_raw(Box::new((self.init)())) as *mut ();
        let i = self.id as usize;
        CURRENT.with(|t| {
            // `init` may have used slots, not this one (it would recurse without end).
            debug_assert!(t.values[i].get().is_null());
            t.values[i].set(value);
            t.frees[i].set(Some(free_box::<T>));
            #[cfg(debug_assertions)]
            t.types[i].set(Some(std::any::TypeId::of::<T>()));
        });
        // Outside a context the thread owns its slots: freed when it ends. At its very end
        // (another thread-local's destructor using a slot) the value is left to the OS.
        let _ = OWN.try_with(|_| ());
        value
    }
}

impl<T: Copy + 'static> Slot<Cell<T>> {
    #[inline]
    pub fn get(&'static self) -> T {
        self.with(Cell::get)
    }
}

impl<T: 'static> Slot<Cell<T>> {
    #[inline]
    pub fn set(&'static self, v: T) {
        self.with(|c| c.set(v))
    }
}

impl<T: Default + 'static> Slot<Cell<T>> {
    #[inline]
    pub fn take(&'static self) -> T {
        self.with(Cell::take)
    }
}

/// # Safety
/// `p` must come from `Box::<T>::into_raw` and not be used again.
unsafe fn free_box<T>(p: *mut ()) {
    // SAFETY: as the caller promises.
    drop(unsafe { Box::from_raw(p as *mut T) });
}

/// A worker's state: every slot, made as the code run inside [`Context::enter`] uses it. Not
/// `Send` (its values are a thread's: `Rc`s, `RefCell`s).
pub struct Context {
    values: [*mut (); COUNT],
    frees: [Option<Free>; COUNT],
    #[cfg(debug_assertions)]
    types: [Option<std::any::TypeId>; COUNT],
}

impl Default for Context {
    fn default() -> Self {
        Self::new()
    }
}

impl Context {
    /// A context with no slot made yet.
    pub fn new() -> Self {
        Context {
            values: [ptr::null_mut(); COUNT],
            frees: [None; COUNT],
            #[cfg(debug_assertions)]
            types: [None; COUNT],
        }
    }

    /// Runs `f` with this context current on this thread; the one current before is again
    /// when `f` returns or unwinds.
    pub fn enter<R>(&mut self, f: impl FnOnce() -> R) -> R {
        struct Back<'a>(&'a mut Context);
        impl Drop for Back<'_> {
            fn drop(&mut self) {
                self.0.swap();
            }
        }
        self.swap();
        let _back = Back(self);
        f()
    }

    /// Exchanges this context's slots with the thread's current ones.
    fn swap(&mut self) {
        CURRENT.with(|t| {
            for i in 0..COUNT {
                self.values[i] = t.values[i].replace(self.values[i]);
                self.frees[i] = t.frees[i].replace(self.frees[i]);
                #[cfg(debug_assertions)]
                {
                    self.types[i] = t.types[i].replace(self.types[i]);
                }
            }
        });
    }

    /// Whether slot `id` has been made in this context (not while it is entered).
    #[cfg(test)]
    pub fn has(&self, id: Id) -> bool {
        !self.values[id as usize].is_null()
    }
}

impl Drop for Context {
    fn drop(&mut self) {
        // Entered, so a value whose drop uses another slot finds this context's.
        self.enter(free_current);
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::cell::RefCell;
    use std::sync::atomic::{AtomicU32, Ordering};
    use std::sync::Arc;

    static COUNTER: Slot<Cell<u32>> = Slot::new(Id::Clock, || Cell::new(7));
    static LIST: Slot<RefCell<Vec<u32>>> = Slot::new(Id::Random, || RefCell::new(Vec::new()));
    static DROPS: Slot<Cell<u32>> = Slot::new(Id::Stopping, || Cell::new(0));

    /// Counts its drop and pushes to `LIST` (a drop using another slot).
    struct Noisy(Arc<AtomicU32>);
    impl Drop for Noisy {
        fn drop(&mut self) {
            self.0.fetch_add(1, Ordering::Relaxed);
            LIST.with(|l| l.borrow_mut().push(99));
        }
    }
    static NOISY: Slot<RefCell<Option<Noisy>>> = Slot::new(Id::Watched, || RefCell::new(None));

    #[test]
    fn contexts_keep_their_own_state_on_one_thread() {
        let mut a = Context::new();
        let mut b = Context::new();
        assert!(!a.has(Id::Clock));
        a.enter(|| {
            assert_eq!(COUNTER.get(), 7);
            COUNTER.set(1);
            LIST.with(|l| l.borrow_mut().push(1));
        });
        assert!(a.has(Id::Clock) && a.has(Id::Random));
        b.enter(|| {
            assert_eq!(COUNTER.get(), 7, "b starts fresh");
            COUNTER.set(2);
            // Nested: a inside b, then b again.
            a.enter(|| assert_eq!(COUNTER.get(), 1));
            assert_eq!(COUNTER.get(), 2);
        });
        a.enter(|| {
            assert_eq!(COUNTER.get(), 1);
            assert_eq!(LIST.with(|l| l.borrow().clone()), vec![1]);
        });
        // The thread's own slots are apart from both.
        COUNTER.set(5);
        a.enter(|| assert_eq!(COUNTER.get(), 1));
        assert_eq!(COUNTER.get(), 5);
    }

    #[test]
    fn entering_is_undone_by_a_panic() {
        let mut a = Context::new();
        COUNTER.set(3);
        let r = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| {
            a.enter(|| {
                COUNTER.set(4);
                panic!("inside");
            })
        }));
        assert!(r.is_err());
        assert_eq!(COUNTER.get(), 3);
        a.enter(|| assert_eq!(COUNTER.get(), 4));
    }

    #[test]
    fn a_dropped_context_frees_its_values_inside_itself() {
        let dropped = Arc::new(AtomicU32::new(0));
        let mut a = Context::new();
        a.enter(|| {
            NOISY.with(|n| *n.borrow_mut() = Some(Noisy(dropped.clone())));
            DROPS.set(1);
        });
        LIST.with(|l| l.borrow_mut().clear());
        drop(a);
        assert_eq!(dropped.load(Ordering::Relaxed), 1, "the value was dropped");
        // Its drop used `LIST` inside the dropped context, not the thread's own.
        assert!(LIST.with(|l| l.borrow().is_empty()));
    }

    #[test]
    fn a_thread_frees_its_own_slots_when_it_ends() {
        let dropped = Arc::new(AtomicU32::new(0));
        let d = dropped.clone();
        std::thread::spawn(move || NOISY.with(|n| *n.borrow_mut() = Some(Noisy(d))))
            .join()
            .expect("thread");
        assert_eq!(dropped.load(Ordering::Relaxed), 1);
    }

    #[test]
    #[cfg(debug_assertions)]
    fn one_id_with_two_types_is_caught() {
        static WRONG: Slot<Cell<u64>> = Slot::new(Id::Clock, || Cell::new(0));
        let mut a = Context::new();
        a.enter(|| {
            COUNTER.get();
            let r = std::panic::catch_unwind(|| WRONG.get());
            assert!(r.is_err());
        });
    }
}
