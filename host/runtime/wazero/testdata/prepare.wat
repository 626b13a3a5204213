;; The fixed input of TestPrepareVersion (prepared_internal_test.go): a small
;; module with something of everything the prepared-module rewrite touches
;; (loops of each block type, the immediates the rewriter skips, a
;; sched_yield import, imported and defined globals, an export section, a
;; body whose size grows past one LEB byte, data segments to merge). Its
;; prepared form's sha256 is recorded in that test for each prepareVersion.
;;
;; Rebuild prepare.wasm after editing (wabt): wat2wasm prepare.wat -o prepare.wasm
(module
  (type $void (func))
  (type $i32 (func (result i32)))
  (type $i32_i32 (func (param i32) (result i32)))
  (import "env" "f" (func $f (type $void)))
  (import "wasi_snapshot_preview1" "sched_yield" (func $yield (type $i32)))
  (import "env" "g" (global $g i32))
  (table 2 funcref)
  (memory 2)
  (global $h (mut i64) (i64.const 7))
  (export "spin" (func $spin))
  (export "memory" (memory 0))
  (elem (i32.const 0) func $spin $imm)

  ;; a loop that spins until the host interrupts it
  (func $spin
    (loop $l (br $l)))

  ;; every kind of immediate, some holding the byte 0x03 (loop)
  (func $imm (param $p i32) (result i32) (local $a i32) (local $b i64)
    (local.set $a (i32.const 3))
    (i32.const 3)
    (loop $t (type $i32_i32) (param i32) (result i32)
      (i32.add (i32.const 127))
      (i32.load offset=3 align=4)
      (br_if $t (i32.eqz (local.get $a)))
      (br_table 0 0 0 (i32.const 0)))
    drop
    (loop $r (result i32) (i32.const 3))
    drop
    (local.set $b (i64.const 0x0303030303030303))
    (drop (f32.const 3.0e-3))
    (drop (f64.const 3.0e-300))
    (block $x (br_table $x $x $x (local.get $p)))
    (drop (memory.size))
    (memory.fill (i32.const 3) (i32.const 3) (i32.const 3))
    (memory.copy (i32.const 3) (i32.const 3) (i32.const 3))
    (drop (local.tee $a (local.get $p)))
    (call $f)
    (drop (call $yield))
    (drop (ref.is_null (ref.func $spin)))
    (drop (ref.null func))
    (drop (select (result i32) (i32.const 3) (i32.const 3) (i32.const 0)))
    (drop (i32.trunc_sat_f32_s (f32.const 1.0)))
    (drop (call_indirect (type $i32_i32) (i32.const 3) (i32.const 1)))
    (global.set $h (i64.extend_i32_u (global.get $g)))
    (drop (memory.grow (i32.const 0)))
    (i32.const 0))

  ;; many loops: the instrumented body's size takes two LEB bytes
  (func $many
    (loop) (loop) (loop) (loop) (loop) (loop) (loop) (loop) (loop) (loop)
    (loop) (loop) (loop) (loop) (loop) (loop) (loop) (loop) (loop) (loop))

  ;; segments with small gaps (merged into one) and one far beyond
  (data (i32.const 16) "abc")
  (data (i32.const 100) "de")
  (data (i32.const 103) "f")
  (data (i32.const 65000) "far"))
