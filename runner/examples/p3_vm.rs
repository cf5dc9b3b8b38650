//! The pipelines bench's p3 (join by id) run through a register machine over the interpreter's
//! own values: what an execution model of flat code and registers would cost on p3 as written,
//! not fused. The `keep` fn and the `reduce` fn are hand-assembled into ops, as a compiler over
//! the analyzed tree would emit them. Each op charges the steps the walker charges for the same
//! nodes, against a budget, and reads its operands where they are. A field read goes through
//! the call's `KeyHint`, a lookup through `get`'s lenient read, and the accumulator is updated
//! in place. The `keep` result is a vector of records, and `reduce` reads them back, as the
//! walker's builtins do.
//!
//! A measurement driver: nothing in it is reachable from `ptc-runner` (BENCHMARKS.md, issue 15,
//! session 33). Usage: `p3_vm N CONTEXT.json [fused|borrowed]`. It runs the `keep`
//! and `reduce` of p3 N times (with `fused`, the two fns as one, over one pass; with `borrowed`,
//! fused and with registers that read the orders and by-id's customers in place, session 35),
//! then prints the
//! top five, to compare with `ptc run`'s answer. Counted as `eval_repeat` is: N and 2N under
//! callgrind (toggle `p3_vm::p3_vm*`). It allocates through
//! the runner's own allocator.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::print_stdout)]

include!("support/runner_heap.rs");
include!("support/p3_parts.rs");

use ptc_runner::value::{Coll, MapImpl, Record, Shape};
use std::rc::Rc;

/// One op; registers are indexes into the frame's eight.
enum Op {
    /// `r[dst] = (:key r[src])`: one step.
    Field {
        dst: usize,
        src: usize,
        key: usize,
    },
    /// `r[dst] = (get capture r[k])`: one step.
    GetCapture {
        dst: usize,
        k: usize,
    },
    /// Unless `(= konst (:key r[src]))`, go to `to`: two steps (the prim and the field).
    UnlessFieldEq {
        src: usize,
        key: usize,
        to: usize,
    },
    /// `r[dst] = {k0 r[a] k1 r[b]}`, the two registers moved in.
    Record2 {
        dst: usize,
        a: usize,
        b: usize,
    },
    /// `r[acc] = (update r[acc] r[k] (fnil + 0) r[x])` in place: two steps (the call, `fnil`).
    UpdateAdd {
        acc: usize,
        k: usize,
        x: usize,
    },
    /// The value of `r[src]`, moved out.
    Return {
        src: usize,
    },
    ReturnNil,
}

/// What the ops read beside the registers.
struct Env {
    keys: Vec<(Text, KeyHint)>,
    capture: Value,
    konst: Value,
    shape: Rc<Shape>,
}

/// Runs `ops` over `regs`; `None` when the budget would pass `limit`.
fn run(ops: &[Op], regs: &mut [Value; 8], env: &Env, steps: &mut u64, limit: u64) -> Option<Value> {
    let mut pc = 0;
    loop {
        let op = ops.get(pc)?;
        pc += 1;
        match *op {
            Op::Field { dst, src, key } => {
                *steps += 1;
                let (name, hint) = env.keys.get(key)?;
                let v = match &regs[src & 7] {
                    Value::Map(m) => m
                        .get_keyword_hinted(name, hint)
                        .cloned()
                        .unwrap_or_default(),
                    _ => Value::Nil,
                };
                set(regs, dst, v);
            }
            Op::GetCapture { dst, k } => {
                *steps += 1;
                let v = match &env.capture {
                    Value::Map(m) => m.get_lenient(&regs[k & 7]).cloned().unwrap_or_default(),
                    _ => Value::Nil,
                };
                set(regs, dst, v);
            }
            Op::UnlessFieldEq { src, key, to } => {
                *steps += 2;
                let (name, hint) = env.keys.get(key)?;
                let eq = match &regs[src & 7] {
                    Value::Map(m) => m.get_keyword_hinted(name, hint) == Some(&env.konst),
                    _ => false,
                };
                if !eq {
                    pc = to;
                }
            }
            Op::Record2 { dst, a, b } => {
                let mut coll = Coll::new(MapImpl::Record(Record::empty(env.shape.clone())));
                if let MapImpl::Record(r) = coll.make_mut() {
                    r.push(std::mem::take(&mut regs[a & 7]));
                    r.push(std::mem::take(&mut regs[b & 7]));
                }
                set(regs, dst, Value::Map(coll));
            }
            Op::UpdateAdd { acc, k, x } => {
                *steps += 2;
                let key = std::mem::take(&mut regs[k & 7]);
                let add = match &regs[x & 7] {
                    Value::Float(f) => *f,
                    _ => return None,
                };
                if let Value::Map(m) = &mut regs[acc & 7] {
                    let mm = m.make_mut();
                    let new = match mm.get_lenient(&key) {
                        None | Some(Value::Nil) => Value::Float(add),
                        Some(Value::Float(old)) => Value::Float(old + add),
                        Some(_) => return None,
                    };
                    mm.insert(key, new);
                }
            }
            Op::Return { src } => {
                return (*steps <= limit).then(|| std::mem::take(&mut regs[src & 7]));
            }
            Op::ReturnNil => return (*steps <= limit).then_some(Value::Nil),
        }
    }
}

/// The join both fns start with, `o` in register `o` and the next four free from `o + 1`:
/// `(:customer_id o)`, its customer `c` from by-id, a jump to op 7 unless `c` is gold, then
/// `(:name c)` in `o + 3` and `(:total o)` in `o + 4`. Keys: 0 customer_id, 1 tier, 2 name,
/// 3 total.
fn join_ops(o: usize) -> Vec<Op> {
    let (id, c, name, total) = (o + 1, o + 2, o + 3, o + 4);
    vec![
        read(id, o, 0),
        Op::GetCapture { dst: c, k: id },
        Op::UnlessFieldEq {
            src: c,
            key: 1,
            to: 7,
        },
        read(name, c, 2),
        read(total, o, 3),
    ]
}

/// `(fn [o] (let [c (get by-id (:customer_id o))] (when (= "gold" (:tier c)) {:customer (:name
/// c) :total (:total o)})))`, with `o` in r0.
fn keep_ops() -> Vec<Op> {
    let mut ops = join_ops(0);
    ops.extend([
        Op::Record2 { dst: 5, a: 3, b: 4 },
        Op::Return { src: 5 },
        // 7: the `when`'s nil.
        Op::ReturnNil,
    ]);
    ops
}

/// `(fn [acc r] (update acc (:customer r) (fnil + 0) (:total r)))`, acc in r0 and r in r1.
/// Keys: 4 customer, 3 total.
fn reduce_ops() -> Vec<Op> {
    vec![
        read(2, 1, 4),
        read(3, 1, 3),
        Op::UpdateAdd { acc: 0, k: 2, x: 3 },
        Op::Return { src: 0 },
    ]
}

/// `Op::Field`, written short in the op lists.
const fn read(dst: usize, src: usize, key: usize) -> Op {
    Op::Field { dst, src, key }
}

/// `r[dst] = v`, the old value forgotten when it holds nothing (`Value`'s drop is out of line).
#[inline(always)]
fn set(regs: &mut [Value; 8], dst: usize, v: Value) {
    let old = std::mem::replace(&mut regs[dst & 7], v);
    if old.holds_nothing() {
        std::mem::forget(old);
    } else {
        drop(old);
    }
}

/// The `keep` fn's body inlined into the `reduce` fn's, as a fusing compiler would make
/// `(reduce g {} (keep f xs))`: no kept sequence and no record, the two values read where the
/// record would have been. `acc` in r0 and `o` in r1.
fn fused_ops() -> Vec<Op> {
    let mut ops = join_ops(1);
    ops.extend([
        Op::UpdateAdd { acc: 0, k: 4, x: 5 },
        Op::Return { src: 0 },
        // 7: the order is not kept: the accumulator as it was.
        Op::Return { src: 0 },
    ]);
    ops
}

/// Lets go of every register (a returning call's frame).
fn clear(regs: &mut [Value; 8]) {
    for r in regs.iter_mut() {
        if !r.holds_nothing() {
            drop(std::mem::take(r));
        }
    }
}

/// p3's `keep` then `reduce`, each element's call run by [`run`] in a cleared frame: the
/// accumulator of the answer. (by-id is built once, outside; the sort is `top_five`.)
#[inline(never)]
fn p3_vm(orders: &[Value], env: &Env, keep: &[Op], reduce: &[Op]) -> Value {
    let mut regs: [Value; 8] = Default::default();
    let (mut steps, limit) = (0u64, u64::MAX);
    let mut kept = Vec::new();
    for o in orders {
        regs[0] = o.clone();
        let v = run(keep, &mut regs, env, &mut steps, limit).unwrap_or_default();
        clear(&mut regs);
        if !matches!(v, Value::Nil) {
            kept.push(v);
        }
    }
    let kept = Value::vector(kept);
    let mut acc = Value::map(MapImpl::Small(Default::default()));
    if let Value::Vector(rs) = &kept {
        for r in rs.iter() {
            regs[0] = acc;
            regs[1] = r.clone();
            acc = run(reduce, &mut regs, env, &mut steps, limit).unwrap_or_default();
            clear(&mut regs);
        }
    }
    acc
}

/// [`p3_vm`] fused ([`fused_ops`]): one pass over the orders.
#[inline(never)]
fn p3_vm_fused(orders: &[Value], env: &Env, fused: &[Op]) -> Value {
    let mut regs: [Value; 8] = Default::default();
    let (mut steps, limit) = (0u64, u64::MAX);
    let mut acc = Value::map(MapImpl::Small(Default::default()));
    for o in orders {
        regs[0] = acc;
        regs[1] = o.clone();
        acc = run(fused, &mut regs, env, &mut steps, limit).unwrap_or_default();
        clear(&mut regs);
    }
    acc
}

/// A register of the borrowing mode: a value the frame owns, or one read in place from data that
/// outlives the loop (an order, a customer in by-id, a field of either): no count taken or given back.
enum Reg<'a> {
    Own(Value),
    Ref(&'a Value),
}

impl Reg<'_> {
    fn get(&self) -> &Value {
        match self {
            Reg::Own(v) => v,
            Reg::Ref(v) => v,
        }
    }
}

/// [`run`] over borrowing registers, for [`fused_ops`]: a field of a borrowed map and `get`'s
/// answer from the capture are borrowed too; the accumulator (`r0`) is owned and updated in place,
/// its key cloned only when it is new.
fn run_borrowed<'a>(
    ops: &[Op],
    regs: &mut [Reg<'a>; 8],
    env: &'a Env,
    steps: &mut u64,
    limit: u64,
) -> Option<()> {
    let mut pc = 0;
    loop {
        let op = ops.get(pc)?;
        pc += 1;
        match *op {
            Op::Field { dst, src, key } => {
                *steps += 1;
                let (name, hint) = env.keys.get(key)?;
                let v = match &regs[src & 7] {
                    Reg::Ref(Value::Map(m)) => {
                        Reg::Ref(m.get_keyword_hinted(name, hint).unwrap_or(&Value::Nil))
                    }
                    Reg::Own(Value::Map(m)) => Reg::Own(
                        m.get_keyword_hinted(name, hint)
                            .cloned()
                            .unwrap_or_default(),
                    ),
                    _ => Reg::Ref(&Value::Nil),
                };
                regs[dst & 7] = v;
            }
            Op::GetCapture { dst, k } => {
                *steps += 1;
                let v = match &env.capture {
                    Value::Map(m) => m.get_lenient(regs[k & 7].get()).unwrap_or(&Value::Nil),
                    _ => &Value::Nil,
                };
                regs[dst & 7] = Reg::Ref(v);
            }
            Op::UnlessFieldEq { src, key, to } => {
                *steps += 2;
                let (name, hint) = env.keys.get(key)?;
                let eq = match regs[src & 7].get() {
                    Value::Map(m) => m.get_keyword_hinted(name, hint) == Some(&env.konst),
                    _ => false,
                };
                if !eq {
                    pc = to;
                }
            }
            Op::UpdateAdd { acc, k, x } => {
                *steps += 2;
                let add = match regs[x & 7].get() {
                    Value::Float(f) => *f,
                    _ => return None,
                };
                let key = regs[k & 7].get().clone();
                if let Reg::Own(Value::Map(m)) = &mut regs[acc & 7] {
                    let mm = m.make_mut();
                    match mm.get_mut(&key) {
                        Some(Value::Float(old)) => *old += add,
                        Some(_) => return None,
                        None => mm.insert(key, Value::Float(add)),
                    }
                }
            }
            Op::Return { .. } | Op::ReturnNil => return (*steps <= limit).then_some(()),
            Op::Record2 { .. } => return None,
        }
    }
}

/// [`p3_vm_fused`] over borrowing registers ([`run_borrowed`]).
#[inline(never)]
fn p3_vm_borrowed(orders: &[Value], env: &Env, fused: &[Op]) -> Value {
    let (mut steps, limit) = (0u64, u64::MAX);
    let mut regs: [Reg<'_>; 8] = std::array::from_fn(|_| Reg::Ref(&Value::Nil));
    regs[0] = Reg::Own(Value::map(MapImpl::Small(Default::default())));
    for o in orders {
        regs[1] = Reg::Ref(o);
        run_borrowed(fused, &mut regs, env, &mut steps, limit);
    }
    match std::mem::replace(&mut regs[0], Reg::Ref(&Value::Nil)) {
        Reg::Own(acc) => acc,
        Reg::Ref(v) => v.clone(),
    }
}

fn main() {
    alloc::arm(u64::MAX);
    let args: Vec<String> = std::env::args().collect();
    let n = args[1].parse::<usize>().expect("N");
    let ctx = load_context(&args[2]);
    let mut by_id = Value::map(MapImpl::Small(Default::default()));
    if let Value::Vector(cs) = field(&ctx, &kw("customers")) {
        for c in cs.iter() {
            if let Value::Map(m) = &mut by_id {
                m.make_mut().insert(field(c, &kw("id")).clone(), c.clone());
            }
        }
    }
    let keys = ["customer_id", "tier", "name", "total", "customer"];
    let env = Env {
        keys: keys.iter().map(|k| kw(k)).collect(),
        capture: by_id,
        konst: Value::str("gold"),
        shape: Shape::new(vec![Value::kw("customer"), Value::kw("total")]).expect("a shape"),
    };
    let orders: Vec<Value> = match field(&ctx, &kw("orders")) {
        Value::Vector(os) => os.iter().cloned().collect(),
        _ => Vec::new(),
    };
    let (keep, reduce, fused) = (keep_ops(), reduce_ops(), fused_ops());
    let once = || match args.get(3).map(String::as_str) {
        Some("fused") => p3_vm_fused(&orders, &env, &fused),
        Some("borrowed") => p3_vm_borrowed(&orders, &env, &fused),
        _ => p3_vm(&orders, &env, &keep, &reduce),
    };
    for _ in 0..n {
        std::hint::black_box(once());
    }
    let acc = once();
    println!("{:?}", top_five(&acc));
}
