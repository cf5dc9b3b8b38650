;; Top customers by paid revenue: join the orders tool's result with the customers in the context,
;; aggregate, and return only the answer (not the raw data) to the model.
(let [orders   (tool/orders {:region data/region})
      paid     (filter #(= "paid" (:status %)) orders)
      by-cust  (group-by :customer_id paid)
      names    (into {} (map (juxt :id :name) data/customers))]
  (println "paid orders:" (count paid))
  (->> by-cust
       (map (fn [[id os]] {:customer (get names id)
                           :orders   (count os)
                           :revenue  (sum-by :total os)}))
       (sort-by :revenue :desc)
       (take 3)))
