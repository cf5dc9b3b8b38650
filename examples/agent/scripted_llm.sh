#!/bin/sh
# A scripted stand-in for a model, for recording examples/agent/replay.jsonl without network:
# it answers `ptc agent --llm-cmd` requests (JSON on stdin) by turn. A real model goes in its place
# with --llm-url URL --model NAME (or any command speaking the same stdin/stdout contract).
req=$(cat)
case "$req" in
  *'"turn":1,'*) cat <<'ANSWER'
First I look at the orders and find the gold customers.
```clojure
(def orders (tool/orders {:region data/region}))
(println "orders:" (count orders) "statuses:" (distinct (map :status orders)))
(def gold (set (map :id (filter #(= "gold" (:tier %)) data/customers))))
gold
```
ANSWER
  ;;
  *) cat <<'ANSWER'
Now I sum the paid orders of gold customers and return the best one.
```clojure
(let [paid  (filter #(and (= "paid" (:status %)) (gold (:customer_id %))) orders)
      best  (->> (group-by :customer_id paid)
                 (map (fn [[id os]] {:id id :revenue (sum-by :total os) :ids (mapv :id os)}))
                 (sort-by :revenue >)
                 first)
      names (into {} (map (juxt :id :name) data/customers))]
  (return {:customer (names (:id best)) :revenue (:revenue best) :_order_ids (:ids best)}))
```
ANSWER
  ;;
esac
