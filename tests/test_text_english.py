"""English normalization: exact strings, because the voice reads exactly what we hand it."""

from pathlib import Path

import pytest

from edge_tts.text import normalize

pytestmark = pytest.mark.unit

# Every line of shared/corpus/announcements_en.txt with its exact normalized form.
CORPUS = [
    ("The front door has been unlocked.", "The front door has been unlocked."),
    (
        "Please remember to take your keys and close the garage before you leave.",
        "Please remember to take your keys and close the garage before you leave.",
    ),
    (
        "The washing machine has finished its cycle.",
        "The washing machine has finished its cycle.",
    ),
    (
        "Motion detected in the backyard at 11:42 PM.",
        "Motion detected in the backyard at eleven forty-two PM.",
    ),
    (
        "The temperature in the living room is 21.5 degrees Celsius.",
        "The temperature in the living room is twenty-one point five degrees Celsius.",
    ),
    (
        "Your battery is at 15 percent. Please charge the vehicle soon.",
        "Your battery is at fifteen percent. Please charge the vehicle soon.",
    ),
    (
        "Turn left in 300 meters onto Main St.",
        "Turn left in three hundred meters onto Main Street.",
    ),
    (
        "Reminder: the dentist appointment is tomorrow at 9:30 AM.",
        "Reminder: the dentist appointment is tomorrow at nine thirty AM.",
    ),
    (
        "Warning! Tire pressure low on the front left tire: 28 PSI.",
        "Warning! Tire pressure low on the front left tire: twenty-eight P S I.",
    ),
    (
        "The kitchen lights were turned off after 10 minutes without movement.",
        "The kitchen lights were turned off after ten minutes without movement.",
    ),
    (
        "Good morning. Today will be cloudy with a high of 18 degrees and a 40% chance of rain.",
        "Good morning. Today will be cloudy with a high of eighteen degrees and a forty percent "
        "chance of rain.",
    ),
    (
        "Package delivered to the front porch by UPS at 2:15 PM.",
        "Package delivered to the front porch by UPS at two fifteen PM.",
    ),
    (
        "The freezer door has been open for 5 minutes.",
        "The freezer door has been open for five minutes.",
    ),
    (
        "Dr. Smith called about your prescription; please call back before 5 PM.",
        "Doctor Smith called about your prescription; please call back before five PM.",
    ),
    (
        "Estimated arrival time is 6:45 PM, 23 minutes from now.",
        "Estimated arrival time is six forty-five PM, twenty-three minutes from now.",
    ),
]

# The packaged copy of the shared corpus (../shared/corpus/announcements_en.txt).
CORPUS_FILE = (
    Path(__file__).resolve().parents[1] / "edge_tts" / "voice" / "data" / "evaluation_en.txt"
)


@pytest.mark.parametrize(("raw", "expected"), CORPUS)
def test_corpus_line(raw: str, expected: str) -> None:
    assert normalize(raw) == expected


def test_corpus_table_covers_every_line() -> None:
    lines = [line.strip() for line in CORPUS_FILE.read_text("utf-8").splitlines()]
    assert [line for line in lines if line] == [raw for raw, _ in CORPUS]


@pytest.mark.parametrize(
    ("raw", "expected"),
    [
        ("300", "three hundred"),
        ("1500", "one thousand five hundred"),
        ("2024", "two thousand twenty-four"),
        (
            "1,234,567",
            "one million two hundred thirty-four thousand five hundred sixty-seven",
        ),
        ("-5", "minus five"),
        ("It is -5 outside.", "It is minus five outside."),
        ("21.5", "twenty-one point five"),
        ("3.14", "three point one four"),
        ("0", "zero"),
        ("0.5", "zero point five"),
        ("007", "zero zero seven"),
        ("It costs 5.", "It costs five."),
        ("version 1.2.3.", "version one dot two dot three."),
        ("192.168.1.1", "one hundred ninety-two dot one hundred sixty-eight dot one dot one"),
    ],
)
def test_cardinals_and_decimals(raw: str, expected: str) -> None:
    assert normalize(raw) == expected


@pytest.mark.parametrize(
    ("raw", "expected"),
    [
        ("1st", "first"),
        ("2nd", "second"),
        ("3rd", "third"),
        ("4th", "fourth"),
        ("23rd", "twenty-third"),
        ("101st", "one hundred first"),
        ("the 21ST century", "the twenty-first century"),
        ("the 1990s", "the nineteen nineties"),
        ("the '80s", "the eighties"),
        ("in her 20s", "in her twenties"),
    ],
)
def test_ordinals_and_decades(raw: str, expected: str) -> None:
    assert normalize(raw) == expected


@pytest.mark.parametrize(
    ("raw", "expected"),
    [
        ("40%", "forty percent"),
        ("a 40 % chance", "a forty percent chance"),
        ("15 percent", "fifteen percent"),
        ("-2.5%", "minus two point five percent"),
        ("$5.99", "five dollars and ninety-nine cents"),
        ("$1", "one dollar"),
        ("$0.50", "fifty cents"),
        ("$0.01", "one cent"),
        ("$2.00", "two dollars"),
        ("$1.5", "one dollar and fifty cents"),
        ("€3", "three euros"),
        ("£2.50", "two pounds and fifty pence"),
        ("£0.01", "one penny"),
        ("$1,200", "one thousand two hundred dollars"),
        ("$1.5 million", "one point five million dollars"),
        ("-$5", "minus five dollars"),
        ("5 €", "five euros"),
        ("¥100", "one hundred yen"),
        ("The total is $5.99.", "The total is five dollars and ninety-nine cents."),
    ],
)
def test_percent_and_money(raw: str, expected: str) -> None:
    assert normalize(raw) == expected


@pytest.mark.parametrize(
    ("raw", "expected"),
    [
        ("9:30 AM", "nine thirty AM"),
        ("11:42 PM", "eleven forty-two PM"),
        ("2:15 pm", "two fifteen PM"),
        ("9:30am", "nine thirty AM"),
        ("9:00 AM", "nine AM"),
        ("9:05 a.m.", "nine oh five AM."),
        ("at 9 a.m. Then we go.", "at nine AM. Then we go."),
        ("at 9 a.m. and then", "at nine AM and then"),
        ("Is it 2 a.m.?", "Is it two AM?"),
        ("before 5 PM.", "before five PM."),
        ("12:00 PM", "noon"),
        ("12 PM", "noon"),
        ("12:00 AM", "midnight"),
        ("12:30 PM", "twelve thirty PM"),
        ("23:15", "twenty-three fifteen"),
        ("9:05", "nine oh five"),
        ("07:30", "seven thirty"),
        ("10:00", "ten o'clock"),
        ("13:00", "thirteen hundred"),
        ("00:00", "midnight"),
        ("0:30", "zero thirty"),
        ("9:30:15", "nine thirty and fifteen seconds"),
        # Not times: left for the number rules.
        ("13:00 PM", "thirteen hundred PM"),
        ("25:61", "twenty-five:sixty-one"),
    ],
)
def test_times(raw: str, expected: str) -> None:
    assert normalize(raw) == expected


@pytest.mark.parametrize(
    ("raw", "expected"),
    [
        ("2026-11-29", "November twenty-ninth, twenty twenty-six"),
        ("on 2026-11-29.", "on November twenty-ninth, twenty twenty-six."),
        ("2026-11-29T10:00", "November twenty-ninth, twenty twenty-six at ten o'clock"),
        ("2024-02-29", "February twenty-ninth, twenty twenty-four"),
        ("Nov 29", "November twenty-ninth"),
        ("Nov. 29", "November twenty-ninth"),
        ("November 29th", "November twenty-ninth"),
        ("November 29, 2026", "November twenty-ninth, twenty twenty-six"),
        ("Sept 5", "September fifth"),
        ("May 1st", "May first"),
        ("29 November 2026", "November twenty-ninth, twenty twenty-six"),
        ("due 5 Dec.", "due December fifth."),
        ("the 4th of July", "the fourth of July"),
        ("in November 2026", "in November twenty twenty-six"),
        # Numeric dates: month/day when the first number can be a month, else day/month.
        ("11/29/2026", "November twenty-ninth, twenty twenty-six"),
        ("29/11/2026", "November twenty-ninth, twenty twenty-six"),
        ("3/4/2026", "March fourth, twenty twenty-six"),
        # Impossible dates are left to the number rules.
        ("Nov 31", "Nov thirty-one"),
        ("2025-02-29", "two thousand twenty-five-zero two-twenty-nine"),
        ("1990-2000", "nineteen ninety to two thousand"),
    ],
)
def test_dates(raw: str, expected: str) -> None:
    assert normalize(raw) == expected


@pytest.mark.parametrize(
    ("raw", "expected"),
    [
        ("21 °C", "twenty-one degrees Celsius"),
        ("21°C", "twenty-one degrees Celsius"),
        ("21 ° C", "twenty-one degrees Celsius"),
        ("1 °C", "one degree Celsius"),
        ("-1 °C", "minus one degree Celsius"),
        ("20℃", "twenty degrees Celsius"),
        ("70°F", "seventy degrees Fahrenheit"),
        ("18°", "eighteen degrees"),
        ("50 km/h", "fifty kilometers per hour"),
        ("30 mph", "thirty miles per hour"),
        ("1 mph", "one mile per hour"),
        ("1 km", "one kilometer"),
        ("2.5 km", "two point five kilometers"),
        ("300 m", "three hundred meters"),
        ("5 cm", "five centimeters"),
        ("5 mm", "five millimeters"),
        ("5 kg", "five kilograms"),
        ("1 g", "one gram"),
        ("5 mg", "five milligrams"),
        ("2 l", "two liters"),
        ("1 L", "one liter"),
        ("250 ml", "two hundred fifty milliliters"),
        ("3 kWh", "three kilowatt hours"),
        ("1 kW", "one kilowatt"),
        ("60 W", "sixty watts"),
        ("12V", "twelve volts"),
        ("28 PSI", "twenty-eight P S I"),
        ("32 psi", "thirty-two P S I"),
        ("1 ft", "one foot"),
        ("6 ft", "six feet"),
        ("10 min", "ten minutes"),
        ("1 min", "one minute"),
        ("wait 5 min. Then go.", "wait five minutes. Then go."),
        ("30 sec", "thirty seconds"),
        ("10s", "ten seconds"),
        ("2 hr", "two hours"),
        ("24 h", "twenty-four hours"),
        ("24h", "twenty-four hours"),
        ("5-10 km", "five to ten kilometers"),
        ("5 to 10 km", "five to ten kilometers"),
        ("2x", "two times"),
        # Amps only when the number is not a label ("Gate 5 A", "Apartment 16A").
        ("a 16 A fuse", "a sixteen amps fuse"),
        ("2.5A", "two point five amps"),
        ("Gate 5 A is open", "Gate five A is open"),
        ("Apartment 16A", "Apartment sixteen A"),
        # No number, no unit.
        ("m and km", "m and km"),
    ],
)
def test_units(raw: str, expected: str) -> None:
    assert normalize(raw) == expected


@pytest.mark.parametrize(
    ("raw", "expected"),
    [
        ("Dr. Smith", "Doctor Smith"),
        ("Call Dr. Smith now.", "Call Doctor Smith now."),
        ("Ask the Dr.", "Ask the Doctor."),
        ("Elm Dr. is closed", "Elm Drive is closed"),
        ("Main St. is closed", "Main Street is closed"),
        ("Turn onto Main St.", "Turn onto Main Street."),
        ("We took Main St. Then we stopped.", "We took Main Street. Then we stopped."),
        ("Turn onto 5th St.", "Turn onto fifth Street."),
        ("St. Louis", "Saint Louis"),
        ("Visit St. Louis", "Visit Saint Louis"),
        ("We love St. Louis", "We love Saint Louis"),
        ("Mr. Jones", "Mister Jones"),
        ("Mrs. Jones", "Missus Jones"),
        ("Ms. Lee", "Miz Lee"),
        ("Prof. Xavier", "Professor Xavier"),
        ("Mr Jones", "Mister Jones"),
        ("John Smith Jr. arrived.", "John Smith Junior arrived."),
        ("It was John Smith Sr.", "It was John Smith Senior."),
        ("Turn onto Oak Ave.", "Turn onto Oak Avenue."),
        ("e.g. this", "for example this"),
        ("E.g., that", "For example, that"),
        ("i.e. this", "that is this"),
        ("cats vs. dogs vs cows", "cats versus dogs versus cows"),
        ("apples, pears, etc.", "apples, pears, et cetera."),
        ("apples, etc. The end.", "apples, et cetera. The end."),
        ("apples, etc., and pears", "apples, et cetera, and pears"),
        ("approx. 5 km", "approximately five kilometers"),
        ("No. 5", "Number five"),
        ("Call no. 5", "Call number five"),
    ],
)
def test_abbreviations(raw: str, expected: str) -> None:
    assert normalize(raw) == expected


@pytest.mark.parametrize(
    ("raw", "expected"),
    [
        ("R&D", "R and D"),
        ("Tom & Jerry", "Tom and Jerry"),
        ("mail bob@example.com", "mail bob at example.com"),
        ("2+2=4", "two plus two equals four"),
        ("salt + pepper", "salt plus pepper"),
        ("+5 °C", "plus five degrees Celsius"),
        ("#5", "number five"),
        ("~5 km", "about five kilometers"),
        ("5-10", "five to ten"),
        ("MP3 and 3D", "MP three and three D"),
        ("COVID-19", "COVID-nineteen"),
        ("1/2 cup", "one half cup"),
        ("3/4", "three quarters"),
        ("24/7", "twenty-four seven"),
        ("call 555-1234", "call five five five, one two three four"),
        ("(555) 123-4567", "five five five, one two three, four five six seven"),
    ],
)
def test_symbols(raw: str, expected: str) -> None:
    assert normalize(raw) == expected


@pytest.mark.parametrize(
    ("raw", "expected"),
    [
        # espeak-ng skips "..." entirely, so it becomes the pause it stands for.
        ("Wait\u2026 what", "Wait, what"),
        ("Wait... What now?", "Wait. What now?"),
        ("And then...", "And then."),
        ("(or not...) fine", "(or not.) fine"),
        ("one...two... three", "one, two, three"),
        ("Stop!!! Really?! Yes...", "Stop! Really? Yes."),
        ("Hello \u2014 world", "Hello, world"),
        ("\u201cQuoted\u201d text\u3002", '"Quoted" text.'),
        ("\u00a0 spaced\u3000 out \n", "spaced out"),
        ("", ""),
        ("   ", ""),
    ],
)
def test_cleaning_and_pauses(raw: str, expected: str) -> None:
    assert normalize(raw) == expected


@pytest.mark.parametrize("language", ["en", "en_US", "en-us", "EN-GB", "en_GB"])
def test_every_english_code_gets_english(language: str) -> None:
    assert normalize("Dr. Smith at 9:30 AM.", language) == "Doctor Smith at nine thirty AM."


@pytest.mark.parametrize(
    ("raw", "language", "expected"),
    [
        ("Dr. Müller um 9:30 Uhr\u2026 Ja", "de_DE", "Dr. Müller um 9:30 Uhr. Ja"),
        ("Prix\u00a0: 5\u202f€ !!", "fr-fr", "Prix: 5 €!"),
        ("你好，世界。", "zh", "你好,世界."),
        ("5\u201310 km", "", "5-10 km"),
    ],
)
def test_other_languages_get_only_neutral_cleaning(raw: str, language: str, expected: str) -> None:
    assert normalize(raw, language) == expected
