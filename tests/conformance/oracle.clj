;; PTC-Lisp conformance oracle: evaluates every case of a cases file with real
;; Clojure and writes one EDN result map per line.
;;
;; Usage:
;;   java -cp /usr/share/java/clojure.jar clojure.main oracle.clj CASES.edn OUT.edn
;;
;; Input line:  {:id "core-001" :program "(+ 1 2)" :context {...} :tags [...]}
;; Output line: {:id "core-001" :tags [...] :ok <value>}
;;          or  {:id "core-001" :tags [...] :error "<ExceptionClass>: message"}
;; A case's optional `:reason` (the fail reason PTC-Lisp must give, e.g.
;; :eval_error) is copied to its output line unchanged; Clojure ignores it.
(ns conformance.oracle
  (:require [clojure.edn :as edn]
            [clojure.java.io :as io]
            [clojure.string]
            [clojure.set]
            [clojure.walk]))

(def timeout-ms 2000)

;; ---------------------------------------------------------------- namespaces

(defn- fresh-ns
  "Removes and re-creates namespace `sym`, so nothing leaks between cases."
  [sym]
  (remove-ns sym)
  (create-ns sym))

(defn- setup-namespaces!
  "Creates the context namespaces `data` and `ctx` (one var per context key)
  and the evaluation namespace `sandbox`; returns the latter."
  [context]
  (doseq [ctx-ns '[data ctx]]
    (let [n (fresh-ns ctx-ns)]
      (doseq [[k v] context]
        (intern n (symbol (name k)) v))))
  (let [n (fresh-ns 'sandbox)]
    (binding [*ns* n]
      (refer 'clojure.core))
    (.addAlias n 'str (the-ns 'clojure.string))
    (.addAlias n 'string (the-ns 'clojure.string))
    (.addAlias n 'set (the-ns 'clojure.set))
    (.addAlias n 'walk (the-ns 'clojure.walk))
    n))

;; ---------------------------------------------------------- plain-data check

(defn- plain
  "Fully realizes `x` and returns it as plain data. Sequences stay
  sequences (they print as lists), vectors stay vectors. Anything that is not
  plain data (functions, vars, regexes, ratios, chars, ...) throws."
  [x]
  (cond
    (nil? x) x
    (boolean? x) x
    (string? x) x
    (keyword? x) x
    (instance? Long x) x
    (or (instance? Integer x) (instance? Short x) (instance? Byte x)) (long x)
    (instance? Double x)
    (if (or (Double/isNaN x) (Double/isInfinite x))
      (throw (ex-info (str "NonPlainResult: non-finite double " x) {:nonplain true}))
      x)
    (instance? Float x) (plain (double x))
    (map? x) (into {} (map (fn [[k v]] [(plain k) (plain v)])) x)
    (set? x) (into #{} (map plain) x)
    (vector? x) (mapv plain x)
    (sequential? x) (apply list (map plain x))
    :else
    (throw (ex-info (str "NonPlainResult: " (.getName (class x)))
                    {:nonplain true}))))

;; ----------------------------------------------------------------- evaluate

(defn- root-cause
  "Strips Clojure's compiler/macroexpansion wrappers."
  [^Throwable e]
  (loop [e e]
    (let [c (.getCause e)]
      (if (and c (or (instance? clojure.lang.Compiler$CompilerException e)
                     (and (instance? clojure.lang.ExceptionInfo e)
                          (:clojure.error/phase (ex-data e)))))
        (recur c)
        e))))

(defn- error-string [^Throwable e]
  (let [e (root-cause e)]
    (str (.getName (class e)) ": " (.getMessage e))))

(defn- run-case
  "Evaluates one case on its own thread; returns [:ok printed-value],
  [:error message] or [:nonplain message]. A case still running after
  `timeout-ms` is stopped and reported as [:error \"timeout\"]."
  [{:keys [program context]}]
  (let [n (setup-namespaces! context)
        result (promise)
        body (fn []
               (deliver
                result
                (binding [*ns* n
                          *print-length* nil
                          *print-level* nil
                          *print-meta* false
                          *print-namespace-maps* false
                          *print-dup* false]
                  (try
                    (let [form (read-string (str "(do " program "\n)"))
                          v (plain (eval form))]
                      [:ok (pr-str v)])
                    (catch ThreadDeath e
                      (throw e))
                    (catch Throwable e
                      (if (:nonplain (ex-data e))
                        [:nonplain (.getMessage e)]
                        [:error (error-string e)]))))))
        t (Thread. ^Runnable body "ptc-case")]
    (.setDaemon t true)
    (.start t)
    (.join t timeout-ms)
    (if (realized? result)
      @result
      (do (.interrupt t)
          ;; Runaway loops never look at the interrupt flag: stop the thread
          ;; so it cannot keep eating CPU or memory (works on Java 17).
          (.join t 100)
          (when (.isAlive t) (.stop t))
          (.join t 1000)
          [:error "timeout"]))))

(defn -main [in-file out-file]
  (let [t0 (System/nanoTime)
        cases (with-open [r (io/reader in-file :encoding "UTF-8")]
                (->> (line-seq r)
                     (remove clojure.string/blank?)
                     (map edn/read-string)
                     doall))
        stats (atom {:ok 0 :error 0 :nonplain 0})]
    (with-open [w (io/writer out-file :encoding "UTF-8")]
      (doseq [{:keys [id tags reason] :as c} cases]
        (let [[kind s] (run-case c)
              head (str "{:id " (pr-str id)
                        (when tags (str " :tags " (pr-str tags)))
                        (when reason (str " :reason " (pr-str reason))))]
          (swap! stats update kind inc)
          (case kind
            :ok (.write w (str head " :ok " s "}\n"))
            :error (.write w (str head " :error " (pr-str s) "}\n"))
            :nonplain (do (binding [*out* *err*]
                            (println "WARNING" id s))
                          (.write w (str head " :error " (pr-str s) "}\n")))))))
    (binding [*out* *err*]
      (println (format "oracle: %d cases (%d ok, %d error, %d non-plain) in %.1f s"
                       (count cases) (:ok @stats) (:error @stats) (:nonplain @stats)
                       (/ (- (System/nanoTime) t0) 1e9))))
    (shutdown-agents)
    (System/exit 0)))

(apply -main *command-line-args*)
