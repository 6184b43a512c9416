// Command shipping serves shipping quotes by destination zone and parcel weight.
package main

import (
	"encoding/json"
	"fmt"
	"log"
	"net/http"
	"strconv"
)

// Zone groups destination countries that share a price list.
type Zone int

const (
	Domestic Zone = iota
	Europe
	World
)

var zoneOf = map[string]Zone{"GB": Domestic, "FR": Europe, "DE": Europe, "ES": Europe, "US": World}

// CalculateShipping returns the price in cents for a parcel of the given weight to a country.
func CalculateShipping(country string, grams int) (int, error) {
	zone, ok := zoneOf[country]
	if !ok {
		zone = World
	}
	if grams <= 0 {
		return 0, fmt.Errorf("weight must be positive, got %d", grams)
	}
	base := map[Zone]int{Domestic: 295, Europe: 650, World: 1200}[zone]
	perKilo := map[Zone]int{Domestic: 90, Europe: 250, World: 480}[zone]
	return base + perKilo*((grams+999)/1000), nil
}

func quoteHandler(w http.ResponseWriter, r *http.Request) {
	grams, err := strconv.Atoi(r.URL.Query().Get("grams"))
	if err != nil {
		http.Error(w, "grams must be a number", http.StatusBadRequest)
		return
	}
	cents, err := CalculateShipping(r.URL.Query().Get("country"), grams)
	if err != nil {
		http.Error(w, err.Error(), http.StatusBadRequest)
		return
	}
	json.NewEncoder(w).Encode(map[string]int{"cents": cents})
}

func main() {
	http.HandleFunc("/quote", quoteHandler)
	log.Fatal(http.ListenAndServe(":8081", nil))
}
