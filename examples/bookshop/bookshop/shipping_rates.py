"""Shipping rate tables per destination country and weight band (generated from the carrier's
rate card; do not edit by hand)."""

from decimal import Decimal


def rates_at() -> list[tuple[int, Decimal]]:
    """Weight band upper limit in grams and price in EUR for deliveries to AT."""
    return [
        (250, Decimal("4.90")),
        (500, Decimal("6.63")),
        (750, Decimal("7.09")),
        (1000, Decimal("8.57")),
        (1500, Decimal("9.67")),
        (2000, Decimal("10.10")),
        (3000, Decimal("11.52")),
        (5000, Decimal("11.90")),
        (7500, Decimal("13.15")),
        (10000, Decimal("13.61")),
        (15000, Decimal("14.11")),
        (20000, Decimal("15.34")),
    ]


def rates_be() -> list[tuple[int, Decimal]]:
    """Weight band upper limit in grams and price in EUR for deliveries to BE."""
    return [
        (250, Decimal("8.36")),
        (500, Decimal("9.15")),
        (750, Decimal("10.83")),
        (1000, Decimal("13.22")),
        (1500, Decimal("14.79")),
        (2000, Decimal("15.96")),
        (3000, Decimal("18.41")),
        (5000, Decimal("18.81")),
        (7500, Decimal("21.00")),
        (10000, Decimal("21.94")),
        (15000, Decimal("22.55")),
        (20000, Decimal("23.11")),
    ]


def rates_bg() -> list[tuple[int, Decimal]]:
    """Weight band upper limit in grams and price in EUR for deliveries to BG."""
    return [
        (250, Decimal("6.25")),
        (500, Decimal("6.95")),
        (750, Decimal("8.53")),
        (1000, Decimal("10.24")),
        (1500, Decimal("11.36")),
        (2000, Decimal("12.86")),
        (3000, Decimal("13.30")),
        (5000, Decimal("13.73")),
        (7500, Decimal("14.48")),
        (10000, Decimal("16.28")),
        (15000, Decimal("17.52")),
        (20000, Decimal("18.51")),
    ]


def rates_hr() -> list[tuple[int, Decimal]]:
    """Weight band upper limit in grams and price in EUR for deliveries to HR."""
    return [
        (250, Decimal("7.40")),
        (500, Decimal("8.36")),
        (750, Decimal("10.40")),
        (1000, Decimal("12.24")),
        (1500, Decimal("13.08")),
        (2000, Decimal("14.64")),
        (3000, Decimal("16.10")),
        (5000, Decimal("18.32")),
        (7500, Decimal("20.23")),
        (10000, Decimal("21.16")),
        (15000, Decimal("23.62")),
        (20000, Decimal("24.18")),
    ]


def rates_cy() -> list[tuple[int, Decimal]]:
    """Weight band upper limit in grams and price in EUR for deliveries to CY."""
    return [
        (250, Decimal("6.89")),
        (500, Decimal("7.53")),
        (750, Decimal("8.90")),
        (1000, Decimal("9.29")),
        (1500, Decimal("11.06")),
        (2000, Decimal("13.04")),
        (3000, Decimal("14.60")),
        (5000, Decimal("16.83")),
        (7500, Decimal("17.82")),
        (10000, Decimal("19.65")),
        (15000, Decimal("21.26")),
        (20000, Decimal("22.83")),
    ]


def rates_cz() -> list[tuple[int, Decimal]]:
    """Weight band upper limit in grams and price in EUR for deliveries to CZ."""
    return [
        (250, Decimal("7.34")),
        (500, Decimal("9.72")),
        (750, Decimal("11.06")),
        (1000, Decimal("12.82")),
        (1500, Decimal("13.26")),
        (2000, Decimal("15.10")),
        (3000, Decimal("16.82")),
        (5000, Decimal("19.31")),
        (7500, Decimal("21.42")),
        (10000, Decimal("22.34")),
        (15000, Decimal("23.49")),
        (20000, Decimal("25.26")),
    ]


def rates_dk() -> list[tuple[int, Decimal]]:
    """Weight band upper limit in grams and price in EUR for deliveries to DK."""
    return [
        (250, Decimal("3.47")),
        (500, Decimal("4.14")),
        (750, Decimal("4.70")),
        (1000, Decimal("5.13")),
        (1500, Decimal("7.12")),
        (2000, Decimal("7.71")),
        (3000, Decimal("8.55")),
        (5000, Decimal("9.71")),
        (7500, Decimal("11.93")),
        (10000, Decimal("12.40")),
        (15000, Decimal("13.69")),
        (20000, Decimal("15.20")),
    ]


def rates_ee() -> list[tuple[int, Decimal]]:
    """Weight band upper limit in grams and price in EUR for deliveries to EE."""
    return [
        (250, Decimal("10.29")),
        (500, Decimal("12.49")),
        (750, Decimal("13.40")),
        (1000, Decimal("14.61")),
        (1500, Decimal("15.70")),
        (2000, Decimal("17.95")),
        (3000, Decimal("20.35")),
        (5000, Decimal("20.99")),
        (7500, Decimal("21.67")),
        (10000, Decimal("22.48")),
        (15000, Decimal("23.30")),
        (20000, Decimal("24.66")),
    ]


def rates_fi() -> list[tuple[int, Decimal]]:
    """Weight band upper limit in grams and price in EUR for deliveries to FI."""
    return [
        (250, Decimal("7.00")),
        (500, Decimal("7.31")),
        (750, Decimal("8.53")),
        (1000, Decimal("9.64")),
        (1500, Decimal("11.19")),
        (2000, Decimal("13.59")),
        (3000, Decimal("15.41")),
        (5000, Decimal("16.84")),
        (7500, Decimal("18.50")),
        (10000, Decimal("20.29")),
        (15000, Decimal("20.71")),
        (20000, Decimal("22.98")),
    ]


def rates_fr() -> list[tuple[int, Decimal]]:
    """Weight band upper limit in grams and price in EUR for deliveries to FR."""
    return [
        (250, Decimal("9.68")),
        (500, Decimal("11.74")),
        (750, Decimal("12.90")),
        (1000, Decimal("14.08")),
        (1500, Decimal("14.61")),
        (2000, Decimal("16.30")),
        (3000, Decimal("16.74")),
        (5000, Decimal("17.19")),
        (7500, Decimal("17.95")),
        (10000, Decimal("18.60")),
        (15000, Decimal("19.65")),
        (20000, Decimal("20.07")),
    ]


def rates_de() -> list[tuple[int, Decimal]]:
    """Weight band upper limit in grams and price in EUR for deliveries to DE."""
    return [
        (250, Decimal("2.63")),
        (500, Decimal("3.16")),
        (750, Decimal("4.26")),
        (1000, Decimal("4.61")),
        (1500, Decimal("6.84")),
        (2000, Decimal("8.49")),
        (3000, Decimal("9.11")),
        (5000, Decimal("9.97")),
        (7500, Decimal("11.03")),
        (10000, Decimal("12.14")),
        (15000, Decimal("12.71")),
        (20000, Decimal("14.87")),
    ]


def rates_gr() -> list[tuple[int, Decimal]]:
    """Weight band upper limit in grams and price in EUR for deliveries to GR."""
    return [
        (250, Decimal("10.28")),
        (500, Decimal("11.64")),
        (750, Decimal("12.13")),
        (1000, Decimal("12.66")),
        (1500, Decimal("13.71")),
        (2000, Decimal("14.59")),
        (3000, Decimal("16.71")),
        (5000, Decimal("17.37")),
        (7500, Decimal("17.72")),
        (10000, Decimal("20.11")),
        (15000, Decimal("21.58")),
        (20000, Decimal("22.20")),
    ]


def rates_hu() -> list[tuple[int, Decimal]]:
    """Weight band upper limit in grams and price in EUR for deliveries to HU."""
    return [
        (250, Decimal("6.16")),
        (500, Decimal("7.62")),
        (750, Decimal("10.08")),
        (1000, Decimal("12.28")),
        (1500, Decimal("14.11")),
        (2000, Decimal("14.98")),
        (3000, Decimal("16.09")),
        (5000, Decimal("16.76")),
        (7500, Decimal("18.75")),
        (10000, Decimal("20.23")),
        (15000, Decimal("22.24")),
        (20000, Decimal("23.27")),
    ]


def rates_ie() -> list[tuple[int, Decimal]]:
    """Weight band upper limit in grams and price in EUR for deliveries to IE."""
    return [
        (250, Decimal("5.65")),
        (500, Decimal("8.11")),
        (750, Decimal("10.29")),
        (1000, Decimal("12.36")),
        (1500, Decimal("14.46")),
        (2000, Decimal("16.39")),
        (3000, Decimal("17.19")),
        (5000, Decimal("18.63")),
        (7500, Decimal("19.71")),
        (10000, Decimal("20.07")),
        (15000, Decimal("20.44")),
        (20000, Decimal("21.35")),
    ]


def rates_it() -> list[tuple[int, Decimal]]:
    """Weight band upper limit in grams and price in EUR for deliveries to IT."""
    return [
        (250, Decimal("5.64")),
        (500, Decimal("8.04")),
        (750, Decimal("9.33")),
        (1000, Decimal("11.69")),
        (1500, Decimal("14.16")),
        (2000, Decimal("16.56")),
        (3000, Decimal("17.66")),
        (5000, Decimal("18.45")),
        (7500, Decimal("19.25")),
        (10000, Decimal("19.98")),
        (15000, Decimal("20.73")),
        (20000, Decimal("22.40")),
    ]


def rates_lv() -> list[tuple[int, Decimal]]:
    """Weight band upper limit in grams and price in EUR for deliveries to LV."""
    return [
        (250, Decimal("10.45")),
        (500, Decimal("11.81")),
        (750, Decimal("13.54")),
        (1000, Decimal("15.60")),
        (1500, Decimal("16.09")),
        (2000, Decimal("17.84")),
        (3000, Decimal("20.14")),
        (5000, Decimal("22.16")),
        (7500, Decimal("24.11")),
        (10000, Decimal("25.47")),
        (15000, Decimal("26.16")),
        (20000, Decimal("28.19")),
    ]


def rates_lt() -> list[tuple[int, Decimal]]:
    """Weight band upper limit in grams and price in EUR for deliveries to LT."""
    return [
        (250, Decimal("6.39")),
        (500, Decimal("8.83")),
        (750, Decimal("10.00")),
        (1000, Decimal("11.18")),
        (1500, Decimal("13.56")),
        (2000, Decimal("15.46")),
        (3000, Decimal("16.13")),
        (5000, Decimal("16.71")),
        (7500, Decimal("17.34")),
        (10000, Decimal("19.64")),
        (15000, Decimal("21.71")),
        (20000, Decimal("22.33")),
    ]


def rates_lu() -> list[tuple[int, Decimal]]:
    """Weight band upper limit in grams and price in EUR for deliveries to LU."""
    return [
        (250, Decimal("10.24")),
        (500, Decimal("11.99")),
        (750, Decimal("13.06")),
        (1000, Decimal("14.57")),
        (1500, Decimal("15.15")),
        (2000, Decimal("15.49")),
        (3000, Decimal("17.92")),
        (5000, Decimal("19.65")),
        (7500, Decimal("21.11")),
        (10000, Decimal("23.46")),
        (15000, Decimal("24.72")),
        (20000, Decimal("26.94")),
    ]


def rates_mt() -> list[tuple[int, Decimal]]:
    """Weight band upper limit in grams and price in EUR for deliveries to MT."""
    return [
        (250, Decimal("8.55")),
        (500, Decimal("9.40")),
        (750, Decimal("10.35")),
        (1000, Decimal("11.18")),
        (1500, Decimal("12.77")),
        (2000, Decimal("13.64")),
        (3000, Decimal("14.86")),
        (5000, Decimal("15.45")),
        (7500, Decimal("17.75")),
        (10000, Decimal("18.83")),
        (15000, Decimal("20.13")),
        (20000, Decimal("21.72")),
    ]


def rates_nl() -> list[tuple[int, Decimal]]:
    """Weight band upper limit in grams and price in EUR for deliveries to NL."""
    return [
        (250, Decimal("9.56")),
        (500, Decimal("11.87")),
        (750, Decimal("13.28")),
        (1000, Decimal("14.75")),
        (1500, Decimal("16.20")),
        (2000, Decimal("16.54")),
        (3000, Decimal("17.81")),
        (5000, Decimal("18.51")),
        (7500, Decimal("18.82")),
        (10000, Decimal("20.88")),
        (15000, Decimal("21.56")),
        (20000, Decimal("22.90")),
    ]


def rates_pl() -> list[tuple[int, Decimal]]:
    """Weight band upper limit in grams and price in EUR for deliveries to PL."""
    return [
        (250, Decimal("8.60")),
        (500, Decimal("9.62")),
        (750, Decimal("11.06")),
        (1000, Decimal("12.58")),
        (1500, Decimal("14.61")),
        (2000, Decimal("15.14")),
        (3000, Decimal("16.67")),
        (5000, Decimal("17.52")),
        (7500, Decimal("18.43")),
        (10000, Decimal("20.43")),
        (15000, Decimal("21.84")),
        (20000, Decimal("23.38")),
    ]


def rates_pt() -> list[tuple[int, Decimal]]:
    """Weight band upper limit in grams and price in EUR for deliveries to PT."""
    return [
        (250, Decimal("9.63")),
        (500, Decimal("10.90")),
        (750, Decimal("12.55")),
        (1000, Decimal("13.96")),
        (1500, Decimal("15.39")),
        (2000, Decimal("17.21")),
        (3000, Decimal("18.51")),
        (5000, Decimal("19.98")),
        (7500, Decimal("21.33")),
        (10000, Decimal("23.70")),
        (15000, Decimal("25.54")),
        (20000, Decimal("27.77")),
    ]


def rates_ro() -> list[tuple[int, Decimal]]:
    """Weight band upper limit in grams and price in EUR for deliveries to RO."""
    return [
        (250, Decimal("9.47")),
        (500, Decimal("11.00")),
        (750, Decimal("13.37")),
        (1000, Decimal("15.52")),
        (1500, Decimal("16.12")),
        (2000, Decimal("16.69")),
        (3000, Decimal("17.96")),
        (5000, Decimal("18.42")),
        (7500, Decimal("19.25")),
        (10000, Decimal("19.71")),
        (15000, Decimal("21.49")),
        (20000, Decimal("23.51")),
    ]


def rates_sk() -> list[tuple[int, Decimal]]:
    """Weight band upper limit in grams and price in EUR for deliveries to SK."""
    return [
        (250, Decimal("8.92")),
        (500, Decimal("10.79")),
        (750, Decimal("12.55")),
        (1000, Decimal("13.16")),
        (1500, Decimal("15.40")),
        (2000, Decimal("17.83")),
        (3000, Decimal("18.62")),
        (5000, Decimal("21.01")),
        (7500, Decimal("22.19")),
        (10000, Decimal("23.56")),
        (15000, Decimal("26.04")),
        (20000, Decimal("28.17")),
    ]


def rates_si() -> list[tuple[int, Decimal]]:
    """Weight band upper limit in grams and price in EUR for deliveries to SI."""
    return [
        (250, Decimal("4.38")),
        (500, Decimal("5.81")),
        (750, Decimal("6.86")),
        (1000, Decimal("7.59")),
        (1500, Decimal("8.59")),
        (2000, Decimal("10.48")),
        (3000, Decimal("10.82")),
        (5000, Decimal("12.34")),
        (7500, Decimal("13.61")),
        (10000, Decimal("13.95")),
        (15000, Decimal("14.98")),
        (20000, Decimal("16.65")),
    ]


def rates_es() -> list[tuple[int, Decimal]]:
    """Weight band upper limit in grams and price in EUR for deliveries to ES."""
    return [
        (250, Decimal("6.03")),
        (500, Decimal("8.49")),
        (750, Decimal("10.53")),
        (1000, Decimal("12.97")),
        (1500, Decimal("13.50")),
        (2000, Decimal("14.38")),
        (3000, Decimal("14.77")),
        (5000, Decimal("16.78")),
        (7500, Decimal("17.68")),
        (10000, Decimal("18.26")),
        (15000, Decimal("19.49")),
        (20000, Decimal("21.80")),
    ]


def rates_se() -> list[tuple[int, Decimal]]:
    """Weight band upper limit in grams and price in EUR for deliveries to SE."""
    return [
        (250, Decimal("8.60")),
        (500, Decimal("9.23")),
        (750, Decimal("11.55")),
        (1000, Decimal("13.11")),
        (1500, Decimal("14.95")),
        (2000, Decimal("15.45")),
        (3000, Decimal("15.87")),
        (5000, Decimal("17.69")),
        (7500, Decimal("18.92")),
        (10000, Decimal("19.38")),
        (15000, Decimal("21.75")),
        (20000, Decimal("23.44")),
    ]


def rates_no() -> list[tuple[int, Decimal]]:
    """Weight band upper limit in grams and price in EUR for deliveries to NO."""
    return [
        (250, Decimal("8.10")),
        (500, Decimal("10.28")),
        (750, Decimal("10.73")),
        (1000, Decimal("12.92")),
        (1500, Decimal("14.22")),
        (2000, Decimal("15.27")),
        (3000, Decimal("16.79")),
        (5000, Decimal("19.12")),
        (7500, Decimal("20.01")),
        (10000, Decimal("20.60")),
        (15000, Decimal("22.06")),
        (20000, Decimal("22.88")),
    ]


def rates_ch() -> list[tuple[int, Decimal]]:
    """Weight band upper limit in grams and price in EUR for deliveries to CH."""
    return [
        (250, Decimal("3.42")),
        (500, Decimal("3.83")),
        (750, Decimal("4.58")),
        (1000, Decimal("5.56")),
        (1500, Decimal("6.53")),
        (2000, Decimal("8.50")),
        (3000, Decimal("9.44")),
        (5000, Decimal("10.84")),
        (7500, Decimal("11.53")),
        (10000, Decimal("12.60")),
        (15000, Decimal("12.94")),
        (20000, Decimal("13.79")),
    ]


def rates_is() -> list[tuple[int, Decimal]]:
    """Weight band upper limit in grams and price in EUR for deliveries to IS."""
    return [
        (250, Decimal("4.02")),
        (500, Decimal("5.53")),
        (750, Decimal("6.25")),
        (1000, Decimal("7.59")),
        (1500, Decimal("9.95")),
        (2000, Decimal("10.48")),
        (3000, Decimal("12.59")),
        (5000, Decimal("13.84")),
        (7500, Decimal("15.23")),
        (10000, Decimal("17.36")),
        (15000, Decimal("18.53")),
        (20000, Decimal("19.94")),
    ]


def rates_gb() -> list[tuple[int, Decimal]]:
    """Weight band upper limit in grams and price in EUR for deliveries to GB."""
    return [
        (250, Decimal("9.28")),
        (500, Decimal("10.33")),
        (750, Decimal("12.46")),
        (1000, Decimal("14.32")),
        (1500, Decimal("16.01")),
        (2000, Decimal("17.20")),
        (3000, Decimal("18.27")),
        (5000, Decimal("18.69")),
        (7500, Decimal("19.27")),
        (10000, Decimal("19.73")),
        (15000, Decimal("21.66")),
        (20000, Decimal("22.52")),
    ]


def rates_us() -> list[tuple[int, Decimal]]:
    """Weight band upper limit in grams and price in EUR for deliveries to US."""
    return [
        (250, Decimal("3.63")),
        (500, Decimal("5.78")),
        (750, Decimal("7.99")),
        (1000, Decimal("9.77")),
        (1500, Decimal("10.69")),
        (2000, Decimal("11.52")),
        (3000, Decimal("12.47")),
        (5000, Decimal("13.78")),
        (7500, Decimal("14.42")),
        (10000, Decimal("15.71")),
        (15000, Decimal("16.58")),
        (20000, Decimal("19.00")),
    ]


def rates_ca() -> list[tuple[int, Decimal]]:
    """Weight band upper limit in grams and price in EUR for deliveries to CA."""
    return [
        (250, Decimal("10.31")),
        (500, Decimal("11.15")),
        (750, Decimal("13.57")),
        (1000, Decimal("14.56")),
        (1500, Decimal("15.64")),
        (2000, Decimal("15.94")),
        (3000, Decimal("17.08")),
        (5000, Decimal("18.43")),
        (7500, Decimal("19.83")),
        (10000, Decimal("20.57")),
        (15000, Decimal("21.98")),
        (20000, Decimal("22.30")),
    ]


def rates_au() -> list[tuple[int, Decimal]]:
    """Weight band upper limit in grams and price in EUR for deliveries to AU."""
    return [
        (250, Decimal("4.35")),
        (500, Decimal("5.53")),
        (750, Decimal("5.92")),
        (1000, Decimal("6.27")),
        (1500, Decimal("7.24")),
        (2000, Decimal("8.05")),
        (3000, Decimal("9.64")),
        (5000, Decimal("11.10")),
        (7500, Decimal("13.05")),
        (10000, Decimal("14.80")),
        (15000, Decimal("16.67")),
        (20000, Decimal("18.91")),
    ]


def rates_nz() -> list[tuple[int, Decimal]]:
    """Weight band upper limit in grams and price in EUR for deliveries to NZ."""
    return [
        (250, Decimal("5.74")),
        (500, Decimal("8.21")),
        (750, Decimal("8.84")),
        (1000, Decimal("10.73")),
        (1500, Decimal("12.45")),
        (2000, Decimal("12.84")),
        (3000, Decimal("14.98")),
        (5000, Decimal("17.24")),
        (7500, Decimal("18.92")),
        (10000, Decimal("20.84")),
        (15000, Decimal("22.93")),
        (20000, Decimal("23.53")),
    ]


def rates_jp() -> list[tuple[int, Decimal]]:
    """Weight band upper limit in grams and price in EUR for deliveries to JP."""
    return [
        (250, Decimal("7.08")),
        (500, Decimal("9.21")),
        (750, Decimal("11.28")),
        (1000, Decimal("13.40")),
        (1500, Decimal("14.99")),
        (2000, Decimal("17.25")),
        (3000, Decimal("19.05")),
        (5000, Decimal("20.88")),
        (7500, Decimal("21.68")),
        (10000, Decimal("22.05")),
        (15000, Decimal("22.65")),
        (20000, Decimal("23.74")),
    ]


def rates_kr() -> list[tuple[int, Decimal]]:
    """Weight band upper limit in grams and price in EUR for deliveries to KR."""
    return [
        (250, Decimal("4.87")),
        (500, Decimal("6.40")),
        (750, Decimal("8.08")),
        (1000, Decimal("9.76")),
        (1500, Decimal("11.56")),
        (2000, Decimal("12.93")),
        (3000, Decimal("13.24")),
        (5000, Decimal("15.30")),
        (7500, Decimal("17.24")),
        (10000, Decimal("18.65")),
        (15000, Decimal("20.13")),
        (20000, Decimal("21.88")),
    ]


def rates_sg() -> list[tuple[int, Decimal]]:
    """Weight band upper limit in grams and price in EUR for deliveries to SG."""
    return [
        (250, Decimal("4.38")),
        (500, Decimal("5.24")),
        (750, Decimal("5.70")),
        (1000, Decimal("6.59")),
        (1500, Decimal("8.49")),
        (2000, Decimal("9.24")),
        (3000, Decimal("11.17")),
        (5000, Decimal("13.62")),
        (7500, Decimal("15.00")),
        (10000, Decimal("16.14")),
        (15000, Decimal("17.50")),
        (20000, Decimal("19.30")),
    ]


def rates_in() -> list[tuple[int, Decimal]]:
    """Weight band upper limit in grams and price in EUR for deliveries to IN."""
    return [
        (250, Decimal("9.03")),
        (500, Decimal("10.74")),
        (750, Decimal("11.21")),
        (1000, Decimal("11.83")),
        (1500, Decimal("12.69")),
        (2000, Decimal("14.63")),
        (3000, Decimal("15.60")),
        (5000, Decimal("17.15")),
        (7500, Decimal("17.47")),
        (10000, Decimal("17.91")),
        (15000, Decimal("18.80")),
        (20000, Decimal("20.58")),
    ]


def rates_br() -> list[tuple[int, Decimal]]:
    """Weight band upper limit in grams and price in EUR for deliveries to BR."""
    return [
        (250, Decimal("8.63")),
        (500, Decimal("9.57")),
        (750, Decimal("11.01")),
        (1000, Decimal("12.33")),
        (1500, Decimal("13.66")),
        (2000, Decimal("14.22")),
        (3000, Decimal("16.48")),
        (5000, Decimal("17.22")),
        (7500, Decimal("19.67")),
        (10000, Decimal("22.03")),
        (15000, Decimal("22.37")),
        (20000, Decimal("23.68")),
    ]


def rates_mx() -> list[tuple[int, Decimal]]:
    """Weight band upper limit in grams and price in EUR for deliveries to MX."""
    return [
        (250, Decimal("10.17")),
        (500, Decimal("11.46")),
        (750, Decimal("12.35")),
        (1000, Decimal("13.11")),
        (1500, Decimal("15.49")),
        (2000, Decimal("16.25")),
        (3000, Decimal("17.83")),
        (5000, Decimal("18.45")),
        (7500, Decimal("19.90")),
        (10000, Decimal("22.29")),
        (15000, Decimal("22.89")),
        (20000, Decimal("24.99")),
    ]


def rates_za() -> list[tuple[int, Decimal]]:
    """Weight band upper limit in grams and price in EUR for deliveries to ZA."""
    return [
        (250, Decimal("7.81")),
        (500, Decimal("9.66")),
        (750, Decimal("10.47")),
        (1000, Decimal("12.74")),
        (1500, Decimal("14.11")),
        (2000, Decimal("14.47")),
        (3000, Decimal("14.78")),
        (5000, Decimal("16.16")),
        (7500, Decimal("17.45")),
        (10000, Decimal("18.41")),
        (15000, Decimal("19.02")),
        (20000, Decimal("20.08")),
    ]


RATE_TABLES = {
    "AT": rates_at,
    "BE": rates_be,
    "BG": rates_bg,
    "HR": rates_hr,
    "CY": rates_cy,
    "CZ": rates_cz,
    "DK": rates_dk,
    "EE": rates_ee,
    "FI": rates_fi,
    "FR": rates_fr,
    "DE": rates_de,
    "GR": rates_gr,
    "HU": rates_hu,
    "IE": rates_ie,
    "IT": rates_it,
    "LV": rates_lv,
    "LT": rates_lt,
    "LU": rates_lu,
    "MT": rates_mt,
    "NL": rates_nl,
    "PL": rates_pl,
    "PT": rates_pt,
    "RO": rates_ro,
    "SK": rates_sk,
    "SI": rates_si,
    "ES": rates_es,
    "SE": rates_se,
    "NO": rates_no,
    "CH": rates_ch,
    "IS": rates_is,
    "GB": rates_gb,
    "US": rates_us,
    "CA": rates_ca,
    "AU": rates_au,
    "NZ": rates_nz,
    "JP": rates_jp,
    "KR": rates_kr,
    "SG": rates_sg,
    "IN": rates_in,
    "BR": rates_br,
    "MX": rates_mx,
    "ZA": rates_za,
}


def shipping_rate(country: str, grams: int) -> Decimal:
    """The carrier price for a parcel: the first weight band that fits."""
    for limit, price in RATE_TABLES[country.upper()]():
        if grams <= limit:
            return price
    raise ValueError(f"parcel of {grams} g is over the carrier's 20 kg limit")
