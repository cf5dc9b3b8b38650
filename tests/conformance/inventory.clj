;; Checks that ../../docs/inventory.tsv lists exactly the public vars of clojure.core,
;; clojure.string, clojure.set and clojure.walk of the running Clojure. Run by regen.sh;
;; prints each missing or unknown name and exits 1 if there is any.
(require 'clojure.string 'clojure.set 'clojure.walk)
(def namespaces '[clojure.core clojure.string clojure.set clojure.walk])
(def clojure-names
  (set (for [n namespaces, v (keys (ns-publics n))] [(str n) (str v)])))
(def listed
  (->> (clojure.string/split-lines (slurp (first *command-line-args*)))
       (remove #(or (clojure.string/blank? %) (clojure.string/starts-with? % "#")))
       (map #(vec (take 2 (clojure.string/split % #"\t"))))
       set))
(def missing (sort (clojure.set/difference clojure-names listed)))
(def unknown (sort (clojure.set/difference listed clojure-names)))
(doseq [[ns n] missing] (println (str "inventory: " ns "/" n " is missing")))
(doseq [[ns n] unknown] (println (str "inventory: " ns "/" n " is not a Clojure var")))
(println (str "inventory: " (count listed) " names, " (count missing) " missing, " (count unknown) " unknown"))
(System/exit (if (and (empty? missing) (empty? unknown)) 0 1))
